#include "wire/json_reader.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "wire/json_writer.h"

namespace wctmon::rpc {
namespace {

using nlohmann::json;

/// 64-bit integers travel as decimal strings, addresses as "0x…" strings.
std::uint64_t unsigned64(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_unsigned() || it->is_number_integer()) return it->get<std::uint64_t>();
  const auto text = it->get<std::string>();
  std::uint64_t value = 0;
  const bool hex = text.starts_with("0x");
  const char* begin = text.data() + (hex ? 2 : 0);
  std::from_chars(begin, text.data() + text.size(), value, hex ? 16 : 10);
  return value;
}

template <typename Enum, Enum kLast>
Enum enumFromName(const std::string& name, Enum fallback) {
  for (int i = 0; i <= static_cast<int>(kLast); ++i) {
    const auto value = static_cast<Enum>(i);
    if (protoName(value) == name) return value;
  }
  return fallback;
}

ThreadRef threadRef(const json& j) {
  return ThreadRef{Pid{j.value("pid", 0)}, Tid{j.value("tid", 0)}};
}

WaitNode node(const json& j) {
  WaitNode n;
  n.type =
      enumFromName<ObjectType, kLastObjectType>(j.value("object_type", ""), ObjectType::kUnknown);
  n.status = enumFromName<ObjectStatus, ObjectStatus::kError>(j.value("status", ""),
                                                              ObjectStatus::kUnknown);
  n.thread = threadRef(j);
  n.thread_name = j.value("thread_name", "");
  n.process_name = j.value("process_name", "");
  if (j.contains("wait_time_ms")) {
    n.wait_time = std::chrono::milliseconds(unsigned64(j, "wait_time_ms"));
  }
  if (j.contains("context_switches")) n.context_switches = unsigned64(j, "context_switches");
  n.name = j.value("name", "");
  if (j.contains("timeout_ms")) n.timeout = std::chrono::milliseconds(unsigned64(j, "timeout_ms"));
  n.alertable = j.value("alertable", false);
  for (const auto& pid : j.value("owner_pids", json::array()))
    n.owner_pids.push_back(Pid{pid.get<int>()});
  n.detail = j.value("detail", "");
  return n;
}

}  // namespace

Result<std::vector<WaitChain>> chainsFromJson(std::string_view text) {
  try {
    std::vector<WaitChain> out;
    for (const auto& c : json::parse(text)) {
      WaitChain chain;
      chain.start = threadRef(c);
      for (const auto& n : c.at("nodes")) chain.nodes.push_back(node(n));
      chain.is_cycle = c.value("is_cycle", false);
      chain.truncated = c.value("truncated", false);
      chain.node_count = c.value("node_count", 0U);
      out.push_back(std::move(chain));
    }
    return out;
  } catch (const json::exception& e) {
    return makeError(ErrorCode::kInvalidArgument, std::string("bad chains JSON: ") + e.what());
  }
}

Result<std::vector<ThreadCapture>> capturesFromJson(std::string_view text) {
  try {
    std::vector<ThreadCapture> out;
    for (const auto& c : json::parse(text)) {
      ThreadCapture capture;
      capture.thread = threadRef(c.at("thread"));
      capture.captured = c.value("captured", false);
      capture.error = c.value("error", "");
      capture.architecture = c.value("architecture", "");
      for (const auto& r : c.value("registers", json::array())) {
        capture.registers.push_back(RegisterValue{r.value("name", ""), unsigned64(r, "value")});
      }
      for (const auto& f : c.value("frames", json::array())) {
        capture.frames.push_back(StackFrame{unsigned64(f, "pc"), f.value("function", ""),
                                            f.value("module", ""), unsigned64(f, "offset"),
                                            f.value("scanned", false)});
      }
      capture.stop_time = std::chrono::nanoseconds(unsigned64(c, "stop_time_ns"));
      capture.tracer_pid = c.value("tracer_pid", 0);
      capture.method = c.value("method", "") == "CAPTURE_METHOD_NOT_STOPPED"
                           ? CaptureMethod::kNotStopped
                           : CaptureMethod::kStopped;
      capture.note = c.value("note", "");
      out.push_back(std::move(capture));
    }
    return out;
  } catch (const json::exception& e) {
    return makeError(ErrorCode::kInvalidArgument, std::string("bad captures JSON: ") + e.what());
  }
}

Result<std::vector<IncidentProcess>> processesFromJson(std::string_view text) {
  try {
    std::vector<IncidentProcess> out;
    for (const auto& p : json::parse(text)) {
      out.push_back(IncidentProcess{
          ProcessIdentity{Pid{p.at("pid").get<std::int32_t>()}, unsigned64(p, "start_time")},
          p.value("name", "")});
    }
    return out;
  } catch (const json::exception& e) {
    return makeError(ErrorCode::kInvalidArgument, std::string("bad processes JSON: ") + e.what());
  }
}

}  // namespace wctmon::rpc
