#include "core/incident_alerts.h"

#include <algorithm>
#include <string>

#include "model/format.h"

namespace wctmon {
namespace {

/// The structured fields of an alert about `i` (journald's WCTMON_*, the Event Log's strings).
std::vector<std::pair<std::string, std::string>> incidentFields(const Incident& i) {
  std::string pids;
  for (const auto& p : i.processes) {
    pids += (pids.empty() ? "" : " ") + std::to_string(p.identity.pid.value);
  }
  std::vector<std::pair<std::string, std::string>> fields{
      {"INCIDENT_ID", std::to_string(i.id)},
      {"INCIDENT_KIND", toString(i.kind)},
      {"PID", std::to_string(i.process.pid.value)},
      {"PROCESS", i.process_name},
      {"PIDS", pids.empty() ? std::to_string(i.process.pid.value) : pids},
      {"THREADS", threadList(i.threads)}};
  if (i.dump && !i.dump->path.empty()) {
    fields.emplace_back("DUMP", i.dump->path);
    fields.emplace_back("DUMP_BYTES", std::to_string(i.dump->bytes));
    fields.emplace_back("DUMP_SHA256", i.dump->sha256);
  } else if (i.dump) {
    fields.emplace_back("DUMP_ERROR", i.dump->error);
  }
  return fields;
}

/// The alert that says `incident` opened.
Alert openingOf(std::shared_ptr<const Incident> incident) {
  const auto& i = *incident;
  Alert a;
  a.target = i.target;
  a.kind = openedAlertKind(i.kind);
  a.severity = incidentSeverity(i.kind);
  a.message = i.summary;
  a.fields = incidentFields(i);
  a.incident = std::move(incident);
  return a;
}

}  // namespace

void IncidentAlerts::setLimits(const Config::Alerts& limits) {
  MutexLock lock(mutex_);
  limiter_.setLimits(limits.window, limits.max_per_window);
}

std::optional<Alert> IncidentAlerts::forEvent(IncidentEvent::Type type,
                                              std::shared_ptr<const Incident> incident) {
  if (type == IncidentEvent::Type::kUpdated) return std::nullopt;
  const auto id = incident->id;  // the incident goes with the alert when the rate holds it back
  if (type == IncidentEvent::Type::kOpened) {
    auto out = admitted(openingOf(std::move(incident)));
    if (out) {
      MutexLock lock(mutex_);
      announced_.insert(id);
    }
    return out;
  }
  const auto& i = *incident;
  Alert a;
  a.target = i.target;
  a.kind = AlertKind::kIncidentResolved;
  a.severity = AlertSeverity::kInfo;
  a.message = std::string(toString(i.kind)) + " resolved (" + i.resolution + "): " + i.summary;
  a.fields = incidentFields(i);
  a.incident = std::move(incident);
  MutexLock lock(mutex_);
  if (announced_.erase(id) == 0) return std::nullopt;
  return a;
}

std::optional<Alert> IncidentAlerts::forFailedCapture(std::shared_ptr<const Incident> incident) {
  const auto& evidence = incident->evidence;
  if (std::any_of(evidence.begin(), evidence.end(),
                  [](const ThreadCapture& c) { return c.captured; })) {
    return std::nullopt;
  }
  Alert a;
  a.kind = AlertKind::kCaptureFailed;
  a.severity = AlertSeverity::kWarning;
  a.target = incident->target;
  const std::string why = evidence.empty() ? "no thread to capture" : evidence.front().error;
  a.message = "no evidence of incident " + std::to_string(incident->id) + " could be captured (" +
              why + "): " + incident->summary;
  a.fields = incidentFields(*incident);
  a.fields.emplace_back("REASON", why);
  a.incident = std::move(incident);
  return admitted(std::move(a));
}

std::vector<Alert> IncidentAlerts::adopt(const std::vector<Incident>& open) {
  std::vector<Alert> openings;
  for (const auto& i : open) openings.push_back(openingOf(std::make_shared<const Incident>(i)));
  MutexLock lock(mutex_);
  for (const auto& i : open) announced_.insert(i.id);
  return openings;
}

std::uint64_t IncidentAlerts::suppressed() const {
  MutexLock lock(mutex_);
  return limiter_.suppressed();
}

std::optional<Alert> IncidentAlerts::admitted(Alert alert) {
  MutexLock lock(mutex_);
  if (!limiter_.admit(alert)) return std::nullopt;
  return alert;
}

}  // namespace wctmon
