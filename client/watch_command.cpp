// `watch`: the open incidents, then each change as it happens; with --reconnect, across the
// service's restarts.
#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <sstream>

#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/human_time.h"
#include "client/incident_cells.h"
#include "client/interrupt.h"
#include "client/watch_memory.h"
#include "model/format.h"
#include "wire/proto_convert.h"
#include "wire/text_report.h"

namespace wctmon::client {
namespace {

/// The first wait before connecting again, doubled after each failure up to kLongestWait.
constexpr std::chrono::milliseconds kFirstWait{1000};
constexpr std::chrono::milliseconds kLongestWait{30000};

/// The call in flight and whether the user stopped the watch: the interrupt's thread cancels
/// the one and wakes the wait between calls.
class WatchControl {
 public:
  /// Makes `call` the one stop() cancels; false when the watch is stopped already.
  bool begin(grpc::ClientContext* call) {
    std::lock_guard lock(mutex_);
    call_ = call;
    return !stopped_;
  }
  void end() {
    std::lock_guard lock(mutex_);
    call_ = nullptr;
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    if (call_ != nullptr) call_->TryCancel();
    wake_.notify_all();
  }
  [[nodiscard]] bool stopped() const {
    std::lock_guard lock(mutex_);
    return stopped_;
  }
  /// Waits `time`, or less when the watch is stopped meanwhile.
  void sleep(std::chrono::milliseconds time) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, time, [this] { return stopped_; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  grpc::ClientContext* call_ = nullptr;
  bool stopped_ = false;
};

/// One event as a line: when, what happened, which incident.
std::string eventLine(const v1::IncidentEvent& e) {
  const auto& i = e.incident();
  const char* type = "?";
  auto at = i.updated_at();
  switch (e.type()) {
    case v1::IncidentEvent::TYPE_EXISTING:
      type = "open";
      at = i.opened_at();
      break;
    case v1::IncidentEvent::TYPE_OPENED:
      type = "opened";
      at = i.opened_at();
      break;
    case v1::IncidentEvent::TYPE_UPDATED:
      type = "updated";
      break;
    case v1::IncidentEvent::TYPE_RESOLVED:
      type = "resolved";
      if (i.has_resolved_at()) at = i.resolved_at();
      break;
    default:
      break;
  }
  std::string line = utcTimeText(wire::fromTimestamp(at)) + "  " + type + " #" +
                     std::to_string(i.id()) + " " + kindOf(i.kind()) + " pid " +
                     std::to_string(i.pid()) + " (" + processesOf(i) + ") target " + i.target() +
                     ": " + i.summary();
  if (e.type() == v1::IncidentEvent::TYPE_RESOLVED && !i.resolution().empty()) {
    line += " (" + i.resolution() + ")";
  }
  return line;
}

void printEvent(Session& session, const v1::IncidentEvent& event) {
  if (session.data()) {
    session.printData(event, /*lean=*/true, /*stream=*/true);
  } else if (session.names()) {
    Session::printNames({"incident/" + std::to_string(event.incident().id())});
  } else {
    std::ostringstream out;
    out << eventLine(event) << "\n";
    // The chains of what is still open; a resolution is its line alone.
    if (session.wide() && event.type() != v1::IncidentEvent::TYPE_RESOLVED) {
      for (const auto& chain : event.incident().chains()) {
        wire::writeChain(out, wire::fromProto(chain), 4);
      }
    }
    Session::print(out.str());
  }
  std::cout.flush();
}

/// After a reconnection: the resolutions of incidents shown open that came while no stream was
/// open (the new stream lists only what is open now).
void printMissedResolutions(Session& session, WatchMemory& memory) {
  for (const auto id : memory.shownOpen()) {
    v1::GetIncidentRequest request;
    request.set_id(id);
    v1::IncidentEvent event;
    const auto context = session.connection().context();
    const auto status = session.connection().monitor().GetIncident(context.get(), request,
                                                                   event.mutable_incident());
    // A failure here is the stream's too, and reported with it.
    if (!status.ok() || event.incident().state() != v1::INCIDENT_STATE_RESOLVED) continue;
    event.set_type(v1::IncidentEvent::TYPE_RESOLVED);
    if (memory.admit(event)) printEvent(session, event);
  }
}

/// Whether a watch with --reconnect connects again after a stream that ended with `status`: the
/// service stopped, or could not be reached. A service shutting down cancels the calls it still
/// has (the user's Ctrl+C never gets here).
bool worthAnotherTry(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::CANCELLED;
}

}  // namespace

int runWatch(Session& session, const WatchArgs& args) {
  WatchControl control;
  InterruptWatch interrupt([&control] { control.stop(); });
  WatchMemory memory;
  auto wait = kFirstWait;
  bool again = false;  // a stream before this one ended
  const std::string server = session.connection().server();
  for (;;) {
    const auto context = session.connection().context(/*streaming=*/true);
    if (!control.begin(context.get())) return kExitOk;
    auto reader = session.connection().monitor().WatchIncidents(context.get(), {});
    // The service sends its headers as it takes the watch: from then on the stream is open.
    reader->WaitForInitialMetadata();
    const bool opened = session.connection().connected();
    if (again && opened) {
      Session::notice("wctctl: " + server + ": watching again\n");
      printMissedResolutions(session, memory);
      wait = kFirstWait;
    }
    v1::IncidentEvent event;
    while (reader->Read(&event)) {
      if (memory.admit(event)) printEvent(session, event);
    }
    const auto status = reader->Finish();
    control.end();
    if (control.stopped()) return kExitOk;
    if (!args.reconnect || !worthAnotherTry(status)) {
      // A stream the service took, then ended as it stopped: the server is unavailable now,
      // whatever state the channel is in by the time this is read.
      if (opened && worthAnotherTry(status)) {
        session.fail({kExitUnavailable,
                      "the watch ended: " + (status.error_code() == grpc::StatusCode::CANCELLED
                                                 ? std::string("the service cancelled it")
                                                 : status.error_message())});
        return session.exitCode();
      }
      return session.succeeded(status) ? kExitOk : session.exitCode();
    }
    // The service itself said it is unavailable (it is stopping): the whole wait before asking
    // again. Otherwise it could not be reached: as soon as it answers, or after the wait.
    const bool answered = session.connection().connected();
    const std::string why = status.error_code() == grpc::StatusCode::CANCELLED
                                ? "the service ended the watch"
                                : session.connection().explain(status).reason;
    Session::notice("wctctl: " + server + ": " + why + "; connecting again within " +
                    durationText(wait) + " (--reconnect)\n");
    if (answered) {
      control.sleep(wait);
    } else {
      (void)session.connection().waitForConnection(std::chrono::steady_clock::now() + wait,
                                                   [&control] { return control.stopped(); });
    }
    if (control.stopped()) return kExitOk;
    wait = std::min(wait * 2, kLongestWait);
    again = true;
  }
}

}  // namespace wctmon::client
