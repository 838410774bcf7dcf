#include "runtime/http_alert_sinks.h"

#include <boost/asio/ip/host_name.hpp>
#include <fstream>
#include <sstream>
#include <utility>

#include "model/calendar.h"
#include "runtime/http_exchange.h"
#include "wire/json_writer.h"

namespace wctmon {
namespace {

using nlohmann::json;
using SystemClock = std::chrono::system_clock;

/// "store_fault" -> "WctmonStoreFault".
std::string alertName(std::string_view snake) {
  std::string out = "Wctmon";
  bool upper = true;
  for (const char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out;
}

/// The alertname of an incident of `kind`: that of the Prometheus rule about the same kind, so
/// that one silence or inhibition covers both.
std::string incidentAlertName(IncidentKind kind) {
  return kind == IncidentKind::kBusy ? "WctmonBusyThread" : alertName(toString(kind));
}

std::string field(const Alert& alert, std::string_view name) {
  for (const auto& [key, value] : alert.fields) {
    if (key == name) return value;
  }
  return {};
}

json incidentLabels(const Incident& i, const std::string& host) {
  return {{"alertname", incidentAlertName(i.kind)},
          {"severity", severityName(incidentSeverity(i.kind))},
          {"kind", toString(i.kind)},
          {"target", i.target},
          {"process", i.process_name},
          {"pid", std::to_string(i.process.pid.value)},
          {"incident_id", std::to_string(i.id)},
          {"host", host}};
}

json annotations(const Alert& alert) {
  json out = {{"summary", alert.message}};
  std::string description;
  if (const auto threads = field(alert, "THREADS"); !threads.empty()) {
    description = "threads " + threads;
  }
  if (const auto dump = field(alert, "DUMP"); !dump.empty()) {
    description += (description.empty() ? "" : "; ") + std::string("dump ") + dump;
  }
  if (!description.empty()) out["description"] = description;
  return out;
}

/// The key, labels and `once` of an alert about the service itself; none for one Alertmanager
/// is not told of.
std::optional<AlertmanagerAlert> serviceAlert(const Alert& alert, const std::string& host) {
  switch (alert.kind) {
    case AlertKind::kStoreFault:
    case AlertKind::kStoreRecovered:
      // One alert from the fault to the recovery: the same labels end what the fault began.
      return AlertmanagerAlert{
          "store",
          {{"labels", {{"alertname", "WctmonStoreFault"}, {"severity", "error"}, {"host", host}}}},
          alert.kind == AlertKind::kStoreRecovered};
    case AlertKind::kServiceFailed:
    case AlertKind::kConfigError:
    case AlertKind::kWaitChainSourceUnavailable:
      return AlertmanagerAlert{alertKindName(alert.kind),
                               {{"labels",
                                 {{"alertname", alertName(alertKindName(alert.kind))},
                                  {"severity", severityName(alert.severity)},
                                  {"host", host}}}},
                               true};
    default:
      return std::nullopt;
  }
}

std::string readToken(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

/// Posts `body` to `target`; fails when no answer came or it was not a 2xx. 4xx answers but 408
/// and 429 say the receiver will never take it: not for trying again.
Status postTo(const HttpSinkTarget& target, const std::string& path, std::string body,
              std::string_view receiver) {
  HttpRequest request;
  request.url = target.url;
  request.url.target = path;
  request.body = std::move(body);
  request.ca_file = target.ca_file;
  request.timeout = target.timeout;
  if (!target.token_file.empty()) {
    const auto token = readToken(target.token_file);
    if (token.empty()) {
      return makeError(ErrorCode::kIo, "cannot read a token from " + target.token_file);
    }
    request.headers.emplace_back("Authorization", "Bearer " + token);
  }
  const auto answer = httpExchange(request);
  if (!answer) {
    return makeError(ErrorCode::kIo, std::string(receiver) + " at " + target.url.endpoint.text() +
                                         ": " + answer.error().message);
  }
  if (answer->status >= 200 && answer->status < 300) return std::monostate{};
  std::string said = answer->body.substr(0, answer->body.find('\n'));
  if (said.size() > 200) said.resize(200);
  const bool later = answer->status >= 500 || answer->status == 408 || answer->status == 429;
  return makeError(later ? ErrorCode::kIo : ErrorCode::kInvalidArgument,
                   std::string(receiver) + " answered " + std::to_string(answer->status) +
                       (said.empty() ? "" : ": " + said));
}

/// The path under `url`'s own: "/" + "api/v2/alerts", "/am/" + "api/v2/alerts".
std::string below(const HttpUrl& url, std::string_view path) {
  std::string base = url.target.substr(0, url.target.find('?'));
  if (!base.ends_with('/')) base += '/';
  return base + std::string(path);
}

}  // namespace

std::optional<AlertmanagerAlert> toAlertmanager(const Alert& alert, const std::string& host,
                                                SystemClock::time_point now) {
  const Incident* incident = alert.incident.get();
  std::optional<AlertmanagerAlert> out;
  if (incident != nullptr && alert.kind == AlertKind::kCaptureFailed) {
    json labels = incidentLabels(*incident, host);
    labels["alertname"] = "WctmonCaptureFailed";
    labels["severity"] = severityName(alert.severity);
    out = AlertmanagerAlert{"capture/" + std::to_string(incident->id), {{"labels", labels}}, true};
  } else if (incident != nullptr) {
    const bool resolved = alert.kind == AlertKind::kIncidentResolved;
    out = AlertmanagerAlert{"incident/" + std::to_string(incident->id),
                            {{"labels", incidentLabels(*incident, host)},
                             {"startsAt", utcRfc3339(incident->opened_at)}},
                            resolved};
    if (resolved) out->alert["endsAt"] = utcRfc3339(incident->resolved_at.value_or(now));
  } else {
    out = serviceAlert(alert, host);
    if (!out) return std::nullopt;
    if (alert.kind == AlertKind::kStoreRecovered) {
      out->alert["endsAt"] = utcRfc3339(now);
    } else {
      out->alert["startsAt"] = utcRfc3339(now);
    }
  }
  if (out->once && !out->alert.contains("endsAt")) {
    out->alert["endsAt"] = utcRfc3339(now + kEventLifetime);
  }
  out->alert["annotations"] = annotations(alert);
  return out;
}

std::string webhookBody(const Alert& alert, const std::string& host, SystemClock::time_point now) {
  json fields = json::object();
  for (const auto& [key, value] : alert.fields) fields[key] = value;
  json j = {{"version", 1},
            {"event", alertKindName(alert.kind)},
            {"message_id", messageId(alert.kind)},
            {"severity", severityName(alert.severity)},
            {"message", alert.message},
            {"time", utcRfc3339(now)},
            {"host", host},
            {"target", alert.target},
            {"fields", fields}};
  std::string body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (alert.incident) {
    // The incident as the API writes it, spliced in rather than parsed back into a tree.
    body.pop_back();
    body += ",\"incident\":" + wire::incidentToJson(*alert.incident) + "}";
  }
  return body;
}

AlertmanagerSink::AlertmanagerSink(HttpSinkTarget target, std::string host)
    : target_(std::move(target)), host_(std::move(host)) {}

Status AlertmanagerSink::send(const Alert& alert) {
  const auto now = SystemClock::now();
  auto am = toAlertmanager(alert, host_, now);
  if (!am) return std::monostate{};
  if (am->once) {
    firing_.erase(am->key);
    return post(json::array({am->alert}));
  }
  // Kept before it is sent: one that cannot be sent now is sent at the next refresh.
  firing_[am->key] = am->alert;
  am->alert["endsAt"] = utcRfc3339(now + 4 * kResendInterval);
  return post(json::array({am->alert}));
}

Status AlertmanagerSink::refresh() {
  if (firing_.empty()) return std::monostate{};
  const auto ends = utcRfc3339(SystemClock::now() + 4 * kResendInterval);
  json all = json::array();
  for (const auto& [key, alert] : firing_) {
    all.push_back(alert);
    all.back()["endsAt"] = ends;
  }
  return post(std::move(all));
}

Status AlertmanagerSink::post(json alerts) {
  return postTo(target_, below(target_.url, "api/v2/alerts"),
                alerts.dump(-1, ' ', false, json::error_handler_t::replace), "Alertmanager");
}

WebhookSink::WebhookSink(HttpSinkTarget target, std::string host)
    : target_(std::move(target)), host_(std::move(host)) {}

Status WebhookSink::send(const Alert& alert) {
  return postTo(target_, target_.url.target, webhookBody(alert, host_, SystemClock::now()),
                "the web hook");
}

Result<HttpSinkRoute> makeHttpAlertSink(const Config::AlertSinkConfig& config) {
  auto url = parseHttpUrl(config.url);
  if (!url) return url.error();
  HttpSinkTarget target{*url, config.token_file, config.ca_file, config.timeout};
  const std::string host = boost::asio::ip::host_name();
  if (config.type == AlertSinkKind::kAlertmanager) {
    return HttpSinkRoute{
        std::make_shared<AlertmanagerSink>(std::move(target), host),
        "alerts go to Alertmanager at " + config.url + " (sink " + config.name + ")"};
  }
  return HttpSinkRoute{std::make_shared<WebhookSink>(std::move(target), host),
                       "alerts go to the web hook " + config.url + " (sink " + config.name + ")"};
}

}  // namespace wctmon
