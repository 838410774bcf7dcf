#include "api/requests.h"

#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "wire/proto_convert.h"

namespace wctmon::api {
namespace {

/// A target as the configuration file writes it, so that it is checked by the same rules and
/// its errors name the same JSON pointers.
std::string targetJson(const v1::Target& t) {
  nlohmann::json j = nlohmann::json::object();
  if (!t.name().empty()) j["name"] = t.name();
  if (t.has_exe()) j["exe"] = t.exe();
  if (t.has_cmdline()) j["cmdline"] = t.cmdline();
  if (t.has_pid()) j["pid"] = t.pid();
  if (t.has_all()) j["all"] = t.all();
  if (t.has_interval_ms()) j["interval_ms"] = t.interval_ms();
  if (t.has_hang_threshold_ms()) j["hang_threshold_ms"] = t.hang_threshold_ms();
  if (t.has_out_of_proc()) j["out_of_proc"] = t.out_of_proc();
  if (t.has_wct()) {
    auto& wct = j["wct"] = nlohmann::json::object();
    if (t.wct().has_com()) wct["com"] = t.wct().com();
    if (t.wct().has_critical_sections()) wct["critical_sections"] = t.wct().critical_sections();
    if (t.wct().has_network_io()) wct["network_io"] = t.wct().network_io();
  }
  if (t.has_capture()) j["capture"] = t.capture();
  if (t.ignore_waits_size() > 0) {
    j["ignore_waits"] = std::vector<std::string>(t.ignore_waits().begin(), t.ignore_waits().end());
  }
  // Text that is not UTF-8 cannot reach here (protobuf refuses such a string field), but the
  // dump must never throw on it.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// "OPENED_AT_NS:ID" back into the position it names.
std::optional<IncidentQuery::Position> parsePageToken(const std::string& token) {
  const auto colon = token.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::int64_t ns = 0;
  std::int64_t id = 0;
  const char* begin = token.data();
  const char* end = begin + token.size();
  auto a = std::from_chars(begin, begin + colon, ns);
  auto b = std::from_chars(begin + colon + 1, end, id);
  if (a.ec != std::errc() || a.ptr != begin + colon || b.ec != std::errc() || b.ptr != end) {
    return std::nullopt;
  }
  return IncidentQuery::Position{
      std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::nanoseconds(ns))),
      id};
}

/// Whether `t` is a time the store can hold: nanoseconds since 1970 in 64 bits (1677 to 2262).
bool inStoreRange(const google::protobuf::Timestamp& t) {
  constexpr std::int64_t kMaxSeconds = std::numeric_limits<std::int64_t>::max() / 1'000'000'000;
  return t.seconds() > -kMaxSeconds && t.seconds() < kMaxSeconds && t.nanos() >= 0 &&
         t.nanos() < 1'000'000'000;
}

Error invalid(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

}  // namespace

Result<IncidentPage> incidentPageOf(const v1::ListIncidentsRequest& request) {
  IncidentPage page;
  auto& query = page.query;
  // A value this service does not know (a newer client's) is refused, not taken for "any".
  if (request.state() == v1::INCIDENT_STATE_OPEN) {
    query.state = IncidentState::kOpen;
  } else if (request.state() == v1::INCIDENT_STATE_RESOLVED) {
    query.state = IncidentState::kResolved;
  } else if (request.state() != v1::INCIDENT_STATE_UNSPECIFIED) {
    return invalid("state must be INCIDENT_STATE_OPEN, INCIDENT_STATE_RESOLVED or unset (got " +
                   std::to_string(request.state()) + ")");
  }
  if (request.kind() != v1::INCIDENT_KIND_UNSPECIFIED) {
    query.kind = wire::fromProto(request.kind());
    if (!query.kind) {
      return invalid("kind " + std::to_string(request.kind()) +
                     " is no incident kind this service knows");
    }
  }
  if (request.pid() != 0) query.pid = Pid{request.pid()};
  if (!request.target().empty()) query.target = request.target();
  if (request.has_since()) {
    if (!inStoreRange(request.since())) {
      return invalid("since must be a time between the years 1678 and 2261 (got " +
                     std::to_string(request.since().seconds()) + " s, " +
                     std::to_string(request.since().nanos()) + " ns)");
    }
    query.since = wire::fromTimestamp(request.since());
  }
  if (request.page_size() < 0) return invalid("page_size must not be negative");
  page.size =
      request.page_size() == 0 ? kDefaultPageSize : std::min(request.page_size(), kMaxPageSize);
  if (!request.page_token().empty()) {
    query.after = parsePageToken(request.page_token());
    if (!query.after) return invalid("page_token is not one this service gave");
  }
  query.limit = static_cast<std::size_t>(page.size) + 1;
  return page;
}

std::string pageToken(const Incident& last) {
  return std::to_string(
             std::chrono::duration_cast<std::chrono::nanoseconds>(last.opened_at.time_since_epoch())
                 .count()) +
         ":" + std::to_string(last.id);
}

Result<TargetConfig> targetOf(const v1::Target& target, const Config& defaults) {
  auto parsed = parseTarget(targetJson(target), defaults);
  if (parsed) return std::move(parsed).value();
  std::string message = "invalid target:";
  for (const auto& e : parsed.error()) message += " " + e.toString() + ";";
  message.pop_back();
  return invalid(message);
}

Result<AnalysisRequest> analysisOf(const v1::AnalyzeProcessRequest& request) {
  if (request.pid() <= 0) {
    return invalid("pid must be a process id above 0 (got " + std::to_string(request.pid()) + ")");
  }
  AnalysisRequest out{Pid{request.pid()}, AnalyzeOptions{}};
  out.options.out_of_proc = request.out_of_proc();
  out.options.capture = request.capture();
  if (request.max_nodes() > 0) out.options.max_nodes = request.max_nodes();
  return out;
}

}  // namespace wctmon::api
