#include "wire/proto_convert.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <charconv>

#include "model/enum_names.h"
#include "model/format.h"
#include "wire/utf8.h"

namespace wctmon::wire {
namespace {

void fill(const ThreadRef& ref, v1::ThreadRef* out) {
  out->set_pid(ref.pid.value);
  out->set_tid(ref.tid.value);
}

void fill(const WaitNode& node, v1::WaitNode* out) {
  out->set_object_type(toProto(node.type));
  out->set_status(toProto(node.status));
  if (node.isThread()) {
    out->set_pid(node.thread.pid.value);
    out->set_tid(node.thread.tid.value);
    out->set_thread_name(validUtf8(node.thread_name));
    out->set_process_name(validUtf8(node.process_name));
    out->set_process_title(validUtf8(node.process_title));
    if (node.wait_time) out->set_wait_time_ms(static_cast<std::uint64_t>(node.wait_time->count()));
    if (node.context_switches) out->set_context_switches(*node.context_switches);
    return;
  }
  out->set_name(validUtf8(node.name));
  if (node.timeout) out->set_timeout_ms(static_cast<std::uint64_t>(node.timeout->count()));
  out->set_alertable(node.alertable);
  for (const auto pid : node.owner_pids) out->add_owner_pids(pid.value);
  out->set_detail(validUtf8(node.detail));
}

void fill(const StackFrame& f, v1::StackFrame* frame) {
  frame->set_pc(hexString(f.pc));
  frame->set_function(validUtf8(f.function));
  frame->set_module(validUtf8(f.module));
  frame->set_offset(hexString(f.offset));
  frame->set_scanned(f.scanned);
  frame->set_file(validUtf8(f.file));
  frame->set_line(f.line);
}

void fill(const GoProgram& go, v1::GoProgram* out) {
  out->set_pid(go.pid.value);
  out->set_version(validUtf8(go.version));
  out->set_visible(go.visible);
  out->set_note(validUtf8(go.note));
  out->set_goroutines(go.goroutines);
  for (const auto& g : go.blocked) {
    auto* b = out->add_blocked();
    b->set_id(g.id);
    b->set_status(validUtf8(g.status));
    b->set_wait_reason(validUtf8(g.wait_reason));
    b->set_waits_on(validUtf8(g.waits_on));
    b->set_lock_wait(g.lock_wait);
    if (g.waited) b->set_waited_ms(static_cast<std::uint64_t>(g.waited->count()));
    for (const auto& f : g.frames) fill(f, b->add_frames());
  }
}

void fill(const ThreadCapture& capture, v1::ThreadCapture* out) {
  fill(capture.thread, out->mutable_thread());
  out->set_captured(capture.captured);
  out->set_error(validUtf8(capture.error));
  out->set_architecture(validUtf8(capture.architecture));
  for (const auto& r : capture.registers) {
    auto* reg = out->add_registers();
    reg->set_name(validUtf8(r.name));
    reg->set_value(hexString(r.value));
  }
  for (const auto& f : capture.frames) fill(f, out->add_frames());
  if (capture.runtime_stack) {
    auto* stack = out->mutable_runtime_stack();
    stack->set_runtime(validUtf8(capture.runtime_stack->runtime));
    stack->set_source(validUtf8(capture.runtime_stack->source));
    for (const auto& f : capture.runtime_stack->frames) fill(f, stack->add_frames());
  }
  out->set_stop_time_ns(static_cast<std::uint64_t>(capture.stop_time.count()));
  out->set_method(capture.method == CaptureMethod::kStopped ? v1::CAPTURE_METHOD_STOPPED
                                                            : v1::CAPTURE_METHOD_NOT_STOPPED);
  out->set_note(validUtf8(capture.note));
  out->set_tracer_pid(capture.tracer_pid);
}

void fill(const WaitChain& chain, v1::WaitChain* c) {
  c->set_pid(chain.start.pid.value);
  c->set_tid(chain.start.tid.value);
  for (const auto& node : chain.nodes) fill(node, c->add_nodes());
  c->set_is_cycle(chain.is_cycle);
  c->set_truncated(chain.truncated);
  c->set_node_count(chain.node_count);
}

}  // namespace

google::protobuf::Timestamp toTimestamp(std::chrono::system_clock::time_point t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::chrono::system_clock::time_point fromTimestamp(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(google::protobuf::util::TimeUtil::TimestampToNanoseconds(t))));
}

v1::ObjectType toProto(ObjectType type) {
  switch (type) {
    case ObjectType::kCriticalSection:
      return v1::OBJECT_TYPE_CRITICAL_SECTION;
    case ObjectType::kSendMessage:
      return v1::OBJECT_TYPE_SEND_MESSAGE;
    case ObjectType::kMutex:
      return v1::OBJECT_TYPE_MUTEX;
    case ObjectType::kAlpc:
      return v1::OBJECT_TYPE_ALPC;
    case ObjectType::kCom:
      return v1::OBJECT_TYPE_COM;
    case ObjectType::kThreadWait:
      return v1::OBJECT_TYPE_THREAD_WAIT;
    case ObjectType::kProcessWait:
      return v1::OBJECT_TYPE_PROCESS_WAIT;
    case ObjectType::kThread:
      return v1::OBJECT_TYPE_THREAD;
    case ObjectType::kComActivation:
      return v1::OBJECT_TYPE_COM_ACTIVATION;
    case ObjectType::kUnknown:
      return v1::OBJECT_TYPE_UNKNOWN;
    case ObjectType::kSocketIo:
      return v1::OBJECT_TYPE_SOCKET_IO;
    case ObjectType::kSmbIo:
      return v1::OBJECT_TYPE_SMB_IO;
    case ObjectType::kFutex:
      return v1::OBJECT_TYPE_FUTEX;
    case ObjectType::kRwLock:
      return v1::OBJECT_TYPE_RW_LOCK;
    case ObjectType::kFileLock:
      return v1::OBJECT_TYPE_FILE_LOCK;
    case ObjectType::kPipe:
      return v1::OBJECT_TYPE_PIPE;
    case ObjectType::kUnixSocket:
      return v1::OBJECT_TYPE_UNIX_SOCKET;
    case ObjectType::kSleep:
      return v1::OBJECT_TYPE_SLEEP;
    case ObjectType::kKernelWait:
      return v1::OBJECT_TYPE_KERNEL_WAIT;
    case ObjectType::kEventfd:
      return v1::OBJECT_TYPE_EVENTFD;
    case ObjectType::kPoll:
      return v1::OBJECT_TYPE_POLL;
    case ObjectType::kSignalWait:
      return v1::OBJECT_TYPE_SIGNAL_WAIT;
    case ObjectType::kFifoOpen:
      return v1::OBJECT_TYPE_FIFO_OPEN;
    case ObjectType::kCondition:
      return v1::OBJECT_TYPE_CONDITION;
    case ObjectType::kUnownedLock:
      return v1::OBJECT_TYPE_UNOWNED_LOCK;
  }
  return v1::OBJECT_TYPE_UNKNOWN;
}

v1::ObjectStatus toProto(ObjectStatus status) {
  switch (status) {
    case ObjectStatus::kNoAccess:
      return v1::OBJECT_STATUS_NO_ACCESS;
    case ObjectStatus::kRunning:
      return v1::OBJECT_STATUS_RUNNING;
    case ObjectStatus::kBlocked:
      return v1::OBJECT_STATUS_BLOCKED;
    case ObjectStatus::kPidOnly:
      return v1::OBJECT_STATUS_PID_ONLY;
    case ObjectStatus::kPidOnlyRpcss:
      return v1::OBJECT_STATUS_PID_ONLY_RPCSS;
    case ObjectStatus::kOwned:
      return v1::OBJECT_STATUS_OWNED;
    case ObjectStatus::kNotOwned:
      return v1::OBJECT_STATUS_NOT_OWNED;
    case ObjectStatus::kAbandoned:
      return v1::OBJECT_STATUS_ABANDONED;
    case ObjectStatus::kUnknown:
      return v1::OBJECT_STATUS_UNKNOWN;
    case ObjectStatus::kError:
      return v1::OBJECT_STATUS_ERROR;
  }
  return v1::OBJECT_STATUS_UNKNOWN;
}

v1::IncidentKind toProto(IncidentKind kind) {
  // The enumerations list the kinds in the same order, the proto's after its UNSPECIFIED.
  return static_cast<v1::IncidentKind>(static_cast<int>(kind) + 1);
}

std::optional<IncidentKind> fromProto(v1::IncidentKind kind) {
  const int index = static_cast<int>(kind) - 1;
  if (index < 0 || index >= static_cast<int>(kIncidentKindCount)) return std::nullopt;
  return kIncidentKinds[index];
}

v1::Incident toProto(const Incident& incident) {
  v1::Incident out;
  out.set_id(incident.id);
  out.set_kind(toProto(incident.kind));
  out.set_state(incident.state == IncidentState::kOpen ? v1::INCIDENT_STATE_OPEN
                                                       : v1::INCIDENT_STATE_RESOLVED);
  out.set_pid(incident.process.pid.value);
  out.set_process_start_time(incident.process.start_time);
  out.set_process_name(validUtf8(incident.process_name));
  for (const auto& p : incident.processes) {
    auto* process = out.add_processes();
    process->set_pid(p.identity.pid.value);
    process->set_start_time(p.identity.start_time);
    process->set_name(validUtf8(p.name));
    process->set_title(validUtf8(p.title));
  }
  out.set_target(validUtf8(incident.target));
  out.set_signature(validUtf8(incident.signature));
  for (const auto& t : incident.threads) fill(t, out.add_threads());
  for (const auto& t : incident.spurs) fill(t, out.add_spurs());
  *out.mutable_opened_at() = toTimestamp(incident.opened_at);
  *out.mutable_updated_at() = toTimestamp(incident.updated_at);
  if (incident.resolved_at) *out.mutable_resolved_at() = toTimestamp(*incident.resolved_at);
  out.set_resolution(validUtf8(incident.resolution));
  out.set_summary(validUtf8(incident.summary));
  for (const auto& chain : incident.chains) fill(chain, out.add_chains());
  for (const auto& capture : incident.evidence) fill(capture, out.add_evidence());
  if (incident.dump) *out.mutable_dump() = toProto(*incident.dump);
  return out;
}

v1::Dump toProto(const DumpRecord& dump) {
  v1::Dump out;
  out.set_path(validUtf8(dump.path));
  out.set_bytes(dump.bytes);
  out.set_sha256(dump.sha256);
  out.set_format(dump.format);
  out.set_method(validUtf8(dump.method));
  out.set_error(validUtf8(dump.error));
  return out;
}

DumpRecord fromProto(const v1::Dump& dump) {
  return DumpRecord{.path = dump.path(),
                    .bytes = dump.bytes(),
                    .sha256 = dump.sha256(),
                    .format = dump.format(),
                    .method = dump.method(),
                    .error = dump.error()};
}

v1::AnalyzeResult toProto(const AnalysisResult& result) {
  v1::AnalyzeResult out;
  out.set_pid(result.pid.value);
  out.set_process_name(validUtf8(result.process_name));
  out.set_process_title(validUtf8(result.process_title));
  out.set_process_count(result.process_count);
  out.set_thread_count(result.thread_count);
  for (const auto& chain : result.chains) fill(chain, out.add_chains());
  for (const auto& deadlock : result.deadlocks) {
    auto* d = out.add_deadlocks();
    for (const auto& t : deadlock.threads) fill(t, d->add_threads());
    for (const auto& t : deadlock.spurs) fill(t, d->add_spurs());
    d->set_cross_process(deadlock.crossProcess());
  }
  for (const auto& capture : result.captures) fill(capture, out.add_captures());
  for (const auto& w : result.warnings) out.add_warnings(validUtf8(w));
  for (const auto& go : result.go_programs) fill(go, out.add_go_programs());
  *out.mutable_sampled_at() = toTimestamp(result.sampled_at);
  out.set_analysis_time_us(static_cast<std::uint64_t>(result.analysis_time.count()));
  out.set_process_start_time(result.process_start_time);
  return out;
}

std::string toJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = pretty;
  // Consumers can rely on every field being present, "deadlocks": [] included.
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

v1::WaitChain toProto(const WaitChain& chain) {
  v1::WaitChain out;
  fill(chain, &out);
  return out;
}

v1::ThreadCapture toProto(const ThreadCapture& capture) {
  v1::ThreadCapture out;
  fill(capture, &out);
  return out;
}

v1::IncidentProcess toProto(const IncidentProcess& process) {
  v1::IncidentProcess out;
  out.set_pid(process.identity.pid.value);
  out.set_start_time(process.identity.start_time);
  out.set_name(validUtf8(process.name));
  return out;
}

namespace {

/// The domain value whose proto twin is `value`; unknown for a value newer than this build.
template <typename Enum, typename Proto>
Enum fromProtoEnum(Proto value) {
  for (const auto& n : enumNames<Enum>()) {
    if (toProto(n.value) == value) return n.value;
  }
  return Enum::kUnknown;
}

/// What hexString wrote ("0x1f"); 0 for anything else.
std::uint64_t fromHex(const std::string& text) {
  std::uint64_t value = 0;
  const std::size_t skip = text.starts_with("0x") ? 2 : 0;
  std::from_chars(text.data() + skip, text.data() + text.size(), value, 16);
  return value;
}

StackFrame frameFromProto(const v1::StackFrame& f) {
  return StackFrame{fromHex(f.pc()), f.function(), f.module(), fromHex(f.offset()),
                    f.scanned(),     f.file(),     f.line()};
}

WaitNode fromProto(const v1::WaitNode& n) {
  WaitNode out;
  out.type = fromProtoEnum<ObjectType>(n.object_type());
  out.status = fromProtoEnum<ObjectStatus>(n.status());
  out.thread = ThreadRef{Pid{n.pid()}, Tid{n.tid()}};
  out.thread_name = n.thread_name();
  out.process_name = n.process_name();
  out.process_title = n.process_title();
  if (n.has_wait_time_ms()) out.wait_time = std::chrono::milliseconds(n.wait_time_ms());
  if (n.has_context_switches()) out.context_switches = n.context_switches();
  out.name = n.name();
  if (n.has_timeout_ms()) out.timeout = std::chrono::milliseconds(n.timeout_ms());
  out.alertable = n.alertable();
  for (const auto pid : n.owner_pids()) out.owner_pids.push_back(Pid{pid});
  out.detail = n.detail();
  return out;
}

}  // namespace

WaitChain fromProto(const v1::WaitChain& chain) {
  WaitChain out;
  out.start = ThreadRef{Pid{chain.pid()}, Tid{chain.tid()}};
  out.nodes.reserve(static_cast<std::size_t>(chain.nodes_size()));
  for (const auto& node : chain.nodes()) out.nodes.push_back(fromProto(node));
  out.is_cycle = chain.is_cycle();
  out.truncated = chain.truncated();
  out.node_count = chain.node_count();
  return out;
}

ThreadCapture fromProto(const v1::ThreadCapture& capture) {
  ThreadCapture out;
  out.thread = wire::fromProto(capture.thread());
  out.captured = capture.captured();
  out.error = capture.error();
  out.architecture = capture.architecture();
  out.registers.reserve(static_cast<std::size_t>(capture.registers_size()));
  for (const auto& r : capture.registers()) {
    out.registers.push_back(RegisterValue{r.name(), fromHex(r.value())});
  }
  const auto frameOf = frameFromProto;
  out.frames.reserve(static_cast<std::size_t>(capture.frames_size()));
  for (const auto& f : capture.frames()) out.frames.push_back(frameOf(f));
  if (capture.has_runtime_stack()) {
    RuntimeStack stack{capture.runtime_stack().runtime(), {}, capture.runtime_stack().source()};
    for (const auto& f : capture.runtime_stack().frames()) stack.frames.push_back(frameOf(f));
    out.runtime_stack = std::move(stack);
  }
  out.stop_time = std::chrono::nanoseconds(capture.stop_time_ns());
  out.tracer_pid = capture.tracer_pid();
  out.method = capture.method() == v1::CAPTURE_METHOD_NOT_STOPPED ? CaptureMethod::kNotStopped
                                                                  : CaptureMethod::kStopped;
  out.note = capture.note();
  return out;
}

IncidentProcess fromProto(const v1::IncidentProcess& process) {
  return IncidentProcess{ProcessIdentity{Pid{process.pid()}, process.start_time()}, process.name(),
                         process.title()};
}

ThreadRef fromProto(const v1::ThreadRef& ref) { return ThreadRef{Pid{ref.pid()}, Tid{ref.tid()}}; }

namespace {

/// Each of `items` converted.
template <typename Domain, typename Proto>
std::vector<Domain> allFromProto(const google::protobuf::RepeatedPtrField<Proto>& items) {
  std::vector<Domain> out;
  out.reserve(static_cast<std::size_t>(items.size()));
  for (const auto& item : items) out.push_back(wire::fromProto(item));
  return out;
}

}  // namespace

AnalysisResult fromProto(const v1::AnalyzeResult& result) {
  AnalysisResult out;
  out.pid = Pid{result.pid()};
  out.process_start_time = result.process_start_time();
  out.process_name = result.process_name();
  out.process_title = result.process_title();
  out.process_count = result.process_count();
  out.thread_count = result.thread_count();
  out.chains = allFromProto<WaitChain>(result.chains());
  for (const auto& d : result.deadlocks()) {
    out.deadlocks.push_back(
        Deadlock{allFromProto<ThreadRef>(d.threads()), allFromProto<ThreadRef>(d.spurs())});
  }
  out.captures = allFromProto<ThreadCapture>(result.captures());
  out.warnings.assign(result.warnings().begin(), result.warnings().end());
  for (const auto& go : result.go_programs()) {
    GoProgram g{Pid{go.pid()}, go.version(), go.visible(), go.note(), go.goroutines(), {}};
    for (const auto& b : go.blocked()) {
      Goroutine r{b.id(), b.status(), b.wait_reason(), b.waits_on(), b.lock_wait(), {}, {}};
      if (b.has_waited_ms()) r.waited = std::chrono::milliseconds(b.waited_ms());
      for (const auto& f : b.frames()) r.frames.push_back(frameFromProto(f));
      g.blocked.push_back(std::move(r));
    }
    out.go_programs.push_back(std::move(g));
  }
  out.sampled_at = fromTimestamp(result.sampled_at());
  out.analysis_time = std::chrono::microseconds(result.analysis_time_us());
  return out;
}

Incident fromProto(const v1::Incident& incident) {
  Incident out;
  out.id = incident.id();
  out.kind = fromProto(incident.kind()).value_or(IncidentKind::kDeadlock);
  out.state = incident.state() == v1::INCIDENT_STATE_RESOLVED ? IncidentState::kResolved
                                                              : IncidentState::kOpen;
  out.process = ProcessIdentity{Pid{incident.pid()}, incident.process_start_time()};
  out.process_name = incident.process_name();
  out.processes = allFromProto<IncidentProcess>(incident.processes());
  out.target = incident.target();
  out.signature = incident.signature();
  out.threads = allFromProto<ThreadRef>(incident.threads());
  out.spurs = allFromProto<ThreadRef>(incident.spurs());
  out.opened_at = fromTimestamp(incident.opened_at());
  out.updated_at = fromTimestamp(incident.updated_at());
  if (incident.has_resolved_at()) out.resolved_at = fromTimestamp(incident.resolved_at());
  out.resolution = incident.resolution();
  out.summary = incident.summary();
  out.chains = allFromProto<WaitChain>(incident.chains());
  out.evidence = allFromProto<ThreadCapture>(incident.evidence());
  if (incident.has_dump()) out.dump = fromProto(incident.dump());
  return out;
}

}  // namespace wctmon::wire
