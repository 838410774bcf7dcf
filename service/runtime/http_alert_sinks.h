// Alert sinks that post to HTTP receivers: Prometheus Alertmanager (API v2) and any web hook.
// Each runs behind the alert router, on the router's thread for it: sends block up to their
// timeout, and a failure the receiver may get over (no answer, 5xx, 429) is ErrorCode::kIo for
// the router to try again.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/ports/alert_sink.h"
#include "core/probe_config.h"

namespace wctmon {

/// How an alert shows in Alertmanager: one alert per incident (labels alertname, severity,
/// kind, target, process, pid, incident_id, host), started when the incident opened and ended
/// when it resolved; the service's faults as alerts of their own (WctmonStoreFault until the
/// store recovers; WctmonConfigError, WctmonServiceFailed, WctmonCaptureFailed and
/// WctmonWaitChainSourceUnavailable for kEventLifetime). Its start and stop are not alerts.
struct AlertmanagerAlert {
  /// Which alert it is to the sink: "incident/42", "store"; the same key ends what it started.
  std::string key;
  /// The postable alert of API v2, endsAt aside unless `ends`.
  nlohmann::json alert;
  /// It ends (a resolution, a recovery) or lasts a set time (an event): sent once, not kept.
  bool once = false;
};

/// How long an alert about the service's fault (an event without an end of its own) stays in
/// Alertmanager.
inline constexpr std::chrono::hours kEventLifetime{1};

/// The Alertmanager alert of `alert`, or none for an alert it does not show. `host` names this
/// machine; `now` is the time sent as an event's start.
[[nodiscard]] std::optional<AlertmanagerAlert> toAlertmanager(
    const Alert& alert, const std::string& host, std::chrono::system_clock::time_point now);

/// The JSON a web hook receives for `alert`: {"version": 1, "event": "deadlock_detected",
/// "message_id", "severity", "message", "time", "host", "target", "fields": {...}, and for an
/// incident's alerts "incident": the incident as the API's proto3 JSON}.
[[nodiscard]] std::string webhookBody(const Alert& alert, const std::string& host,
                                      std::chrono::system_clock::time_point now);

/// What every HTTP sink sends with: where, with which token and CAs, within what time.
struct HttpSinkTarget {
  HttpUrl url;
  std::string token_file;
  std::string ca_file;
  std::chrono::milliseconds timeout{5000};
};

/// Posts to Prometheus Alertmanager's API v2 (POST {url}/api/v2/alerts). Keeps the alerts that
/// are firing and sends them again every kResendInterval with an end kResendInterval × 4 ahead,
/// as Prometheus does: Alertmanager resolves an alert it stops hearing of, so a service that
/// dies leaves no alert firing for ever. Used by one thread at a time (the router's).
class AlertmanagerSink final : public AlertSink {
 public:
  static constexpr std::chrono::milliseconds kResendInterval{60000};

  AlertmanagerSink(HttpSinkTarget target, std::string host);

  Status send(const Alert& alert) override;
  [[nodiscard]] std::chrono::milliseconds refreshInterval() const override {
    return kResendInterval;
  }
  Status refresh() override;
  /// An incident open across a restart fires again, from when it opened, until it resolves.
  Status resume(const Alert& alert) override { return send(alert); }

  /// The alerts firing now, by key (for tests).
  [[nodiscard]] std::size_t firing() const { return firing_.size(); }

 private:
  Status post(nlohmann::json alerts);

  HttpSinkTarget target_;
  std::string host_;
  std::map<std::string, nlohmann::json> firing_;
};

/// Posts each alert as JSON (webhookBody) to a URL, with the bearer token of its token file.
class WebhookSink final : public AlertSink {
 public:
  WebhookSink(HttpSinkTarget target, std::string host);
  Status send(const Alert& alert) override;

 private:
  HttpSinkTarget target_;
  std::string host_;
};

/// The sink of an alertmanager or webhook entry of alerts.sinks, and the line the log says about
/// it; an error when its URL does not parse.
struct HttpSinkRoute {
  std::shared_ptr<AlertSink> sink;
  std::string description;
};
[[nodiscard]] Result<HttpSinkRoute> makeHttpAlertSink(const Config::AlertSinkConfig& config);

}  // namespace wctmon
