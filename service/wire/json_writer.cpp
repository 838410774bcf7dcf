#include "wire/json_writer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "model/calendar.h"
#include "model/enum_names.h"
#include "model/format.h"
#include "wire/utf8.h"

namespace wctmon::wire {
namespace {

/// A small streaming JSON writer with two-space indentation. It writes into a buffer it keeps
/// room in, checked once per token rather than once per character: an analysis of 10,000
/// threads is some 200,000 tokens.
class Json {
 public:
  /// Builds the text in memory, or streams it to `sink` in blocks when one is given: a result
  /// of 10,000 threads is megabytes that need not all be held at once.
  explicit Json(std::FILE* sink = nullptr) : sink_(sink) { out_.resize(kBlock + 4096); }
  std::string take() {
    out_.resize(size_);
    size_ = 0;
    return std::move(out_);
  }
  void flush() {
    if (sink_ != nullptr && size_ != 0) {
      std::fwrite(out_.data(), 1, size_, sink_);
      size_ = 0;
    }
  }

  /// Ends the document with a newline, as a line-oriented tool expects.
  void terminate() { put('\n'); }

  void beginObject() { open('{'); }
  void endObject() {
    close('}');
    if (size_ >= kBlock) flush();
  }
  void beginArray() { open('['); }
  void endArray() { close(']'); }

  /// Keys are literals: their lengths are known where they are written.
  template <std::size_t N>
  void key(const char (&k)[N]) {
    separate();
    constexpr std::size_t kLength = N - 1;
    char* at = room(kLength + 4);
    *at++ = '"';
    std::memcpy(at, k, kLength);
    at += kLength;
    std::memcpy(at, "\": ", 3);
    size_ += kLength + 4;
    after_key_ = true;
  }

  void string(std::string_view s) {
    separate();
    if (plainAscii(s)) {
      char* at = room(s.size() + 2);
      *at++ = '"';
      at = copy(at, s);
      *at++ = '"';
      size_ = static_cast<std::size_t>(at - out_.data());
      return;
    }
    put('"');
    if (isValidUtf8(s)) {
      appendEscaped(s);
    } else {
      const std::string repaired = validUtf8(s);
      appendEscaped(repaired);
    }
    put('"');
  }
  void number(std::int64_t v) {
    separate();
    appendInt(v);
  }
  /// 64-bit integers are strings in the proto3 JSON mapping.
  void int64String(std::uint64_t v) {
    separate();
    put('"');
    appendInt(v);
    put('"');
  }
  void boolean(bool v) {
    separate();
    put(v ? std::string_view("true") : std::string_view("false"));
  }

  template <std::size_t N, typename T>
  void field(const char (&k)[N], const T& v) {
    key(k);
    if constexpr (std::is_same_v<T, bool>) {
      boolean(v);
    } else if constexpr (std::is_integral_v<T>) {
      number(static_cast<std::int64_t>(v));
    } else {
      string(std::string_view(v));
    }
  }
  template <std::size_t N>
  void field64(const char (&k)[N], std::uint64_t v) {
    key(k);
    int64String(v);
  }

 private:
  /// Whether `s` is printable ASCII without a quote or a backslash: nothing to escape or repair.
  /// Tested eight characters at a time: every name, kind and detail of a result passes here.
  static bool plainAscii(std::string_view s) {
    constexpr std::uint64_t kOnes = 0x0101010101010101;
    constexpr std::uint64_t kHigh = kOnes * 0x80;
    // A byte of `w` below `n` (all bytes of `w` below 0x80): the word has a high bit here.
    const auto below = [](std::uint64_t w, std::uint64_t n) { return (w - kOnes * n) & ~w; };
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, sizeof(w));
      if (((w | below(w, 0x20) | below(w ^ (kOnes * '"'), 1) | below(w ^ (kOnes * '\\'), 1)) &
           kHigh) != 0) {
        return false;
      }
    }
    for (; i < s.size(); ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if (u < 0x20 || u >= 0x80 || u == '"' || u == '\\') return false;
    }
    return true;
  }
  static char* copy(char* at, std::string_view s) {
    // An empty view may have no data at all, which memcpy must not be given.
    if (!s.empty()) std::memcpy(at, s.data(), s.size());
    return at + s.size();
  }
  /// Where the next `n` characters go; the buffer grows when they would not fit.
  char* room(std::size_t n) {
    if (out_.size() - size_ < n) [[unlikely]]
      grow(n);
    return out_.data() + size_;
  }
  void grow(std::size_t n) { out_.resize(std::max(out_.size() * 2, size_ + n)); }
  void put(char c) {
    *room(1) = c;
    ++size_;
  }
  void put(std::string_view s) {
    copy(room(s.size()), s);
    size_ += s.size();
  }

  template <typename T>
  void appendInt(T v) {
    constexpr std::size_t kDigits = 24;
    char* at = room(kDigits);
    auto [end, ec] = std::to_chars(at, at + kDigits, v);
    size_ = static_cast<std::size_t>(end - out_.data());
  }

  void open(char c) {
    separate();
    put(c);
    ++depth_;
    first_ = true;
  }
  void close(char c) {
    --depth_;
    if (!first_) newline();
    put(c);
    first_ = false;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (depth_ == 0) return;
    if (!first_) put(',');
    first_ = false;
    newline();
  }
  void newline() {
    // Spaces for the usual depths are copied whole (a fixed-size copy is a few stores), and
    // only as many kept as the depth asks.
    static constexpr std::string_view kSpaces = "                                ";
    const auto indent = static_cast<std::size_t>(depth_) * 2;
    char* at = room(std::max(indent, kSpaces.size()) + 1);
    *at = '\n';
    if (indent <= kSpaces.size()) {
      std::memcpy(at + 1, kSpaces.data(), kSpaces.size());
    } else {
      std::memset(at + 1, ' ', indent);
    }
    size_ += indent + 1;
  }
  void appendEscaped(std::string_view s) {
    const auto plain = [](char c) {
      return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
    };
    if (std::all_of(s.begin(), s.end(), plain)) {
      put(s);
      return;
    }
    for (const char c : s) {
      switch (c) {
        case '"':
          put("\\\"");
          break;
        case '\\':
          put("\\\\");
          break;
        case '\n':
          put("\\n");
          break;
        case '\t':
          put("\\t");
          break;
        case '\r':
          put("\\r");
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            std::array<char, 8> buf{};
            std::snprintf(buf.data(), buf.size(), "\\u%04x", static_cast<unsigned char>(c));
            put(std::string_view(buf.data()));
          } else {
            put(c);
          }
      }
    }
  }

  static constexpr std::size_t kBlock = 64 * 1024;
  std::FILE* sink_;
  /// The text written so far is its first size_ characters; the rest is room.
  std::string out_;
  std::size_t size_ = 0;
  int depth_ = 0;
  bool first_ = true;
  bool after_key_ = false;
};

/// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as protobuf prints a Timestamp.
std::string timestamp(std::chrono::system_clock::time_point t) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ns / 1'000'000'000);
  const auto nanos = static_cast<long>(ns % 1'000'000'000);
  const std::tm tm = utcCalendar(seconds);
  std::array<char, 64> buf{};
  std::size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf.data(), n);
  if (nanos != 0) {
    if (nanos % 1'000'000 == 0) {
      std::snprintf(buf.data(), buf.size(), ".%03ld", nanos / 1'000'000);
    } else if (nanos % 1000 == 0) {
      std::snprintf(buf.data(), buf.size(), ".%06ld", nanos / 1000);
    } else {
      std::snprintf(buf.data(), buf.size(), ".%09ld", nanos);
    }
    out += buf.data();
  }
  return out + "Z";
}

void writeThreadRef(Json& j, const ThreadRef& t) {
  j.beginObject();
  j.field("pid", t.pid.value);
  j.field("tid", t.tid.value);
  j.endObject();
}

void writeNode(Json& j, const WaitNode& n) {
  j.beginObject();
  j.field("object_type", protoName(n.type));
  j.field("status", protoName(n.status));
  const bool thread = n.isThread();
  j.field("pid", thread ? n.thread.pid.value : 0);
  j.field("tid", thread ? n.thread.tid.value : 0);
  const std::string_view none;
  j.field("thread_name", thread ? std::string_view(n.thread_name) : none);
  j.field("process_name", thread ? std::string_view(n.process_name) : none);
  j.field("process_title", thread ? std::string_view(n.process_title) : none);
  if (thread && n.wait_time) {
    j.field64("wait_time_ms", static_cast<std::uint64_t>(n.wait_time->count()));
  }
  if (thread && n.context_switches) j.field64("context_switches", *n.context_switches);
  j.field("name", thread ? none : std::string_view(n.name));
  if (!thread && n.timeout) j.field64("timeout_ms", static_cast<std::uint64_t>(n.timeout->count()));
  j.field("alertable", !thread && n.alertable);
  j.key("owner_pids");
  j.beginArray();
  if (!thread) {
    for (const auto pid : n.owner_pids) j.number(pid.value);
  }
  j.endArray();
  j.field("detail", thread ? none : std::string_view(n.detail));
  j.endObject();
}

void writeFrames(Json& j, const std::vector<StackFrame>& frames) {
  j.beginArray();
  for (const auto& f : frames) {
    j.beginObject();
    j.field("pc", hexString(f.pc));
    j.field("function", f.function);
    j.field("module", f.module);
    j.field("offset", hexString(f.offset));
    j.field("scanned", f.scanned);
    j.field("file", f.file);
    j.field("line", f.line);
    j.endObject();
  }
  j.endArray();
}

void writeCapture(Json& j, const ThreadCapture& c) {
  j.beginObject();
  j.key("thread");
  writeThreadRef(j, c.thread);
  j.field("captured", c.captured);
  j.field("error", c.error);
  j.field("architecture", c.architecture);
  j.key("registers");
  j.beginArray();
  for (const auto& r : c.registers) {
    j.beginObject();
    j.field("name", r.name);
    j.field("value", hexString(r.value));
    j.endObject();
  }
  j.endArray();
  j.key("frames");
  writeFrames(j, c.frames);
  if (c.runtime_stack) {
    j.key("runtime_stack");
    j.beginObject();
    j.field("runtime", c.runtime_stack->runtime);
    j.key("frames");
    writeFrames(j, c.runtime_stack->frames);
    j.field("source", c.runtime_stack->source);
    j.endObject();
  }
  j.field64("stop_time_ns", static_cast<std::uint64_t>(c.stop_time.count()));
  j.field("tracer_pid", c.tracer_pid);
  j.field("method", c.method == CaptureMethod::kStopped
                        ? std::string_view("CAPTURE_METHOD_STOPPED")
                        : std::string_view("CAPTURE_METHOD_NOT_STOPPED"));
  j.field("note", c.note);
  j.endObject();
}

void writeGoProgram(Json& j, const GoProgram& go) {
  j.beginObject();
  j.field("pid", go.pid.value);
  j.field("version", go.version);
  j.field("visible", go.visible);
  j.field("note", go.note);
  j.field("goroutines", go.goroutines);
  j.key("blocked");
  j.beginArray();
  for (const auto& g : go.blocked) {
    j.beginObject();
    j.field64("id", g.id);
    j.field("status", g.status);
    j.field("wait_reason", g.wait_reason);
    j.field("waits_on", g.waits_on);
    j.field("lock_wait", g.lock_wait);
    if (g.waited) j.field64("waited_ms", static_cast<std::uint64_t>(g.waited->count()));
    j.key("frames");
    writeFrames(j, g.frames);
    j.endObject();
  }
  j.endArray();
  j.endObject();
}

void writeChains(Json& j, const std::vector<WaitChain>& chains) {
  j.beginArray();
  for (const auto& chain : chains) {
    j.beginObject();
    j.field("pid", chain.start.pid.value);
    j.field("tid", chain.start.tid.value);
    j.key("nodes");
    j.beginArray();
    for (const auto& node : chain.nodes) writeNode(j, node);
    j.endArray();
    j.field("is_cycle", chain.is_cycle);
    j.field("truncated", chain.truncated);
    j.field("node_count", chain.node_count);
    j.endObject();
  }
  j.endArray();
}

void writeCaptures(Json& j, const std::vector<ThreadCapture>& captures) {
  j.beginArray();
  for (const auto& c : captures) writeCapture(j, c);
  j.endArray();
}

void writeThreadRefs(Json& j, const std::vector<ThreadRef>& threads) {
  j.beginArray();
  for (const auto& t : threads) writeThreadRef(j, t);
  j.endArray();
}

void writeProcesses(Json& j, const std::vector<IncidentProcess>& processes) {
  j.beginArray();
  for (const auto& p : processes) {
    j.beginObject();
    j.field("pid", p.identity.pid.value);
    j.field64("start_time", p.identity.start_time);
    j.field("name", p.name);
    j.field("title", p.title);
    j.endObject();
  }
  j.endArray();
}

void writeIncident(Json& j, const Incident& incident) {
  j.beginObject();
  j.field64("id", static_cast<std::uint64_t>(incident.id));
  j.field("kind", kindWireName(incident.kind));
  j.field("state", incident.state == IncidentState::kOpen ? "INCIDENT_STATE_OPEN"
                                                          : "INCIDENT_STATE_RESOLVED");
  j.field("pid", incident.process.pid.value);
  j.field64("process_start_time", incident.process.start_time);
  j.field("process_name", incident.process_name);
  j.key("processes");
  writeProcesses(j, incident.processes);
  j.field("target", incident.target);
  j.field("signature", incident.signature);
  j.key("threads");
  writeThreadRefs(j, incident.threads);
  j.key("spurs");
  writeThreadRefs(j, incident.spurs);
  j.field("opened_at", timestamp(incident.opened_at));
  j.field("updated_at", timestamp(incident.updated_at));
  if (incident.resolved_at) j.field("resolved_at", timestamp(*incident.resolved_at));
  j.field("resolution", incident.resolution);
  j.field("summary", incident.summary);
  j.key("chains");
  writeChains(j, incident.chains);
  j.key("evidence");
  writeCaptures(j, incident.evidence);
  if (incident.dump) {
    const auto& d = *incident.dump;
    j.key("dump");
    j.beginObject();
    j.field("path", d.path);
    j.field64("bytes", d.bytes);
    j.field("sha256", d.sha256);
    j.field("format", d.format);
    j.field("method", d.method);
    j.field("error", d.error);
    j.endObject();
  }
  j.endObject();
}

void writeAnalysis(Json& j, const AnalysisResult& result) {
  j.beginObject();
  j.field("pid", result.pid.value);
  j.field("process_name", result.process_name);
  j.field("process_count", result.process_count);
  j.field("thread_count", result.thread_count);
  j.key("chains");
  writeChains(j, result.chains);
  j.key("deadlocks");
  j.beginArray();
  for (const auto& d : result.deadlocks) {
    j.beginObject();
    j.key("threads");
    writeThreadRefs(j, d.threads);
    j.key("spurs");
    writeThreadRefs(j, d.spurs);
    j.field("cross_process", d.crossProcess());
    j.endObject();
  }
  j.endArray();
  j.key("captures");
  writeCaptures(j, result.captures);
  j.key("warnings");
  j.beginArray();
  for (const auto& w : result.warnings) j.string(w);
  j.endArray();
  j.field("sampled_at", timestamp(result.sampled_at));
  j.field64("analysis_time_us", static_cast<std::uint64_t>(result.analysis_time.count()));
  j.field64("process_start_time", result.process_start_time);
  j.field("process_title", result.process_title);
  j.key("go_programs");
  j.beginArray();
  for (const auto& go : result.go_programs) writeGoProgram(j, go);
  j.endArray();
  j.endObject();
  j.terminate();
}

}  // namespace

std::string_view protoName(ObjectType type) { return wireName(type); }

std::string_view protoName(ObjectStatus status) { return wireName(status); }

std::string analysisToJson(const AnalysisResult& result) {
  Json j;
  writeAnalysis(j, result);
  return j.take();
}

std::string analysisErrorToJson(std::string_view why) {
  Json j;
  j.beginObject();
  j.field("error", why);
  j.endObject();
  j.terminate();
  return j.take();
}

void writeAnalysisJson(const AnalysisResult& result, std::FILE* out) {
  Json j(out);
  writeAnalysis(j, result);
  j.flush();
}

std::string chainsToJson(const std::vector<WaitChain>& chains) {
  Json j;
  writeChains(j, chains);
  return j.take();
}

std::string capturesToJson(const std::vector<ThreadCapture>& captures) {
  Json j;
  writeCaptures(j, captures);
  return j.take();
}

std::string processesToJson(const std::vector<IncidentProcess>& processes) {
  Json j;
  writeProcesses(j, processes);
  return j.take();
}

std::string incidentsToJson(const std::vector<Incident>& incidents) {
  Json j;
  j.beginObject();
  j.key("incidents");
  j.beginArray();
  for (const auto& incident : incidents) writeIncident(j, incident);
  j.endArray();
  j.endObject();
  j.terminate();
  return j.take();
}

struct IncidentsJsonStream::Writer {
  explicit Writer(std::FILE* out) : j(out) {}
  Json j;
};

IncidentsJsonStream::IncidentsJsonStream(std::FILE* out) : writer_(std::make_unique<Writer>(out)) {
  writer_->j.beginObject();
  writer_->j.key("incidents");
  writer_->j.beginArray();
}

IncidentsJsonStream::~IncidentsJsonStream() = default;

void IncidentsJsonStream::add(const Incident& incident) { writeIncident(writer_->j, incident); }

void IncidentsJsonStream::finish() {
  writer_->j.endArray();
  writer_->j.endObject();
  writer_->j.terminate();
  writer_->j.flush();
}

std::string incidentToJson(const Incident& incident) {
  Json j;
  writeIncident(j, incident);
  j.terminate();
  return j.take();
}

}  // namespace wctmon::wire
