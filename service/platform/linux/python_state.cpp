#include "platform/linux/python_state.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "model/format.h"

namespace wctmon::linux_platform {
namespace {

// CPython 3.11 on x86-64 (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
// Include/cpython/pystate.h, code.h, unicodeobject.h), as offsetof gives them with Debian's
// headers of 3.11.2. The version check and the validation below keep them from being applied
// to any other layout.
constexpr std::size_t kRuntimeInterpretersHead = 40;  // _PyRuntimeState.interpreters.head
constexpr std::size_t kRuntimeInterpretersMain = 48;  // _PyRuntimeState.interpreters.main
constexpr std::size_t kInterpNext = 0;                // PyInterpreterState.next
constexpr std::size_t kInterpThreadsHead = 16;        // PyInterpreterState.threads.head
constexpr std::size_t kThreadNext = 8;                // PyThreadState.next
constexpr std::size_t kThreadInterp = 16;             // PyThreadState.interp
constexpr std::size_t kThreadCframe = 56;             // PyThreadState.cframe
constexpr std::size_t kThreadId = 152;                // PyThreadState.thread_id
constexpr std::size_t kThreadNativeId = 160;          // PyThreadState.native_thread_id
constexpr std::size_t kThreadStateRead = 168;
constexpr std::size_t kCframeCurrentFrame = 8;  // _PyCFrame.current_frame
constexpr std::size_t kFrameCode = 32;          // _PyInterpreterFrame.f_code
constexpr std::size_t kFramePrevious = 48;      // _PyInterpreterFrame.previous
constexpr std::size_t kFramePrevInstr = 56;     // _PyInterpreterFrame.prev_instr
constexpr std::size_t kFrameOwner = 69;         // _PyInterpreterFrame.owner
constexpr std::size_t kFrameRead = 72;
constexpr std::size_t kObjectType = 8;          // PyObject.ob_type
constexpr std::size_t kVarSize = 16;            // PyVarObject.ob_size
constexpr std::size_t kTypeName = 24;           // PyTypeObject.tp_name
constexpr std::size_t kCodeFirstLine = 72;      // PyCodeObject.co_firstlineno
constexpr std::size_t kCodeFilename = 112;      // PyCodeObject.co_filename
constexpr std::size_t kCodeName = 120;          // PyCodeObject.co_name
constexpr std::size_t kCodeQualname = 128;      // PyCodeObject.co_qualname
constexpr std::size_t kCodeLinetable = 136;     // PyCodeObject.co_linetable
constexpr std::size_t kCodeInstructions = 184;  // PyCodeObject.co_code_adaptive
constexpr std::size_t kBytesData = 32;          // PyBytesObject.ob_sval
constexpr std::size_t kUnicodeLength = 16;      // PyASCIIObject.length
constexpr std::size_t kUnicodeState = 32;       // PyASCIIObject.state
constexpr std::size_t kAsciiData = 48;          // sizeof(PyASCIIObject)
constexpr std::size_t kCompactUtf8Length = 48;  // PyCompactUnicodeObject.utf8_length
constexpr std::size_t kCompactUtf8 = 56;        // PyCompactUnicodeObject.utf8
constexpr std::size_t kCompactData = 72;        // sizeof(PyCompactUnicodeObject)
constexpr std::uint8_t kFrameOwnerMax = 2;      // FRAME_OWNED_BY_FRAME_OBJECT

// Bounds on what the target's memory makes us read.
constexpr int kMaxInterpreters = 64;
constexpr int kMaxThreads = 65536;
constexpr std::size_t kMaxFrames = 128;
constexpr std::size_t kMaxStringBytes = 1024;
constexpr std::size_t kMaxLinetable = 64 * 1024;
constexpr std::uint64_t kMaxCodeUnits = std::uint64_t{1} << 24;
/// The user-space half of the x86-64 address space: a pointer outside it is none.
constexpr std::uint64_t kUserTop = std::uint64_t{1} << 47;

std::uint64_t word(std::span<const std::byte> bytes, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

bool plausiblePointer(std::uint64_t p) { return p >= 4096 && p < kUserTop && p % 8 == 0; }

/// Appends code point `c` to `out` in UTF-8.
void appendUtf8(std::string& out, std::uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x110000) {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += "\xEF\xBF\xBD";  // U+FFFD
  }
}

/// What one code object says of the frames that run it.
struct Code {
  std::string file;
  std::string function;
  int first_line = 0;
  std::uint64_t code_units = 0;
  std::vector<std::byte> linetable;
};

class Reader {
 public:
  Reader(const MemoryReader& read, const std::function<bool(std::int32_t)>& is_thread)
      : read_(read), is_thread_(is_thread) {}

  PythonState run(const PythonAnchors& anchors) {
    PythonState out;
    const auto fail = [&out](const std::string& why) {
      out.error = "Python frames not readable for this interpreter: " + why;
      out.threads.clear();
      return out;
    };
    if (anchors.runtime == 0) return fail("it has no _PyRuntime symbol");
    if (anchors.version == 0) return fail("it has no Py_Version (older than 3.11)");
    std::array<std::byte, 8> version{};
    if (!read_(anchors.version, version)) return fail("its Py_Version is not readable");
    out.version = static_cast<std::uint32_t>(word(version, 0));
    if ((out.version >> 16) != 0x030b) {
      return fail("version " + std::to_string(out.version >> 24) + "." +
                  std::to_string((out.version >> 16) & 0xff) + ", only 3.11's layout is known");
    }
    std::array<std::byte, kRuntimeInterpretersMain + 8> runtime{};
    if (!read_(anchors.runtime, runtime)) return fail("_PyRuntime is not readable");
    const auto main = word(runtime, kRuntimeInterpretersMain);
    auto interp = word(runtime, kRuntimeInterpretersHead);
    if (!plausiblePointer(main) || !plausiblePointer(interp)) {
      return fail("no interpreter is running (_PyRuntime lists none)");
    }
    bool main_seen = false;
    std::size_t rejected = 0;
    for (int i = 0; i < kMaxInterpreters && interp != 0; ++i) {
      if (!plausiblePointer(interp)) return fail("the interpreter list does not validate");
      main_seen = main_seen || interp == main;
      std::array<std::byte, kInterpThreadsHead + 8> state{};
      if (!read_(interp, state)) return fail("an interpreter's state is not readable");
      if (!readThreads(interp, word(state, kInterpThreadsHead), out, rejected)) {
        return fail("a thread state does not validate (not 3.11's layout?)");
      }
      interp = word(state, kInterpNext);
    }
    if (!main_seen) return fail("the main interpreter is not in the interpreter list");
    if (out.threads.empty()) {
      return fail(rejected > 0 ? "no thread state names a thread of the process"
                               : "the interpreter has no thread state");
    }
    return out;
  }

 private:
  /// Reads the thread states of interpreter `interp` from `head`; false when one does not
  /// belong to it (a layout that is not the one assumed). `rejected` counts those whose thread
  /// is not one of the process (a thread state of a thread that is ending).
  bool readThreads(std::uint64_t interp, std::uint64_t head, PythonState& out,
                   std::size_t& rejected) {
    auto tstate = head;
    for (int i = 0; i < kMaxThreads && tstate != 0; ++i) {
      std::array<std::byte, kThreadStateRead> bytes{};
      if (!plausiblePointer(tstate) || !read_(tstate, bytes)) return false;
      if (word(bytes, kThreadInterp) != interp) return false;
      PythonThread thread;
      thread.thread_id = word(bytes, kThreadId);
      const auto native = word(bytes, kThreadNativeId);
      tstate = word(bytes, kThreadNext);
      if (native == 0 || native > 0x7fffffff || !is_thread_(static_cast<std::int32_t>(native)) ||
          !isThreadControlBlock(thread.thread_id)) {
        ++rejected;
        continue;
      }
      thread.native_id = static_cast<std::int32_t>(native);
      readFrames(word(bytes, kThreadCframe), thread);
      out.threads.push_back(std::move(thread));
    }
    return true;
  }

  /// A pthread_t of x86-64 Linux is the address of the thread's control block, whose first word
  /// points to itself (the TLS ABI: %fs:0 holds the %fs base).
  bool isThreadControlBlock(std::uint64_t p) {
    std::array<std::byte, 8> self{};
    return plausiblePointer(p) && read_(p, self) && word(self, 0) == p;
  }

  void readFrames(std::uint64_t cframe, PythonThread& thread) {
    std::array<std::byte, kCframeCurrentFrame + 8> c{};
    if (!plausiblePointer(cframe) || !read_(cframe, c)) {
      thread.truncated = cframe != 0;
      return;
    }
    auto frame = word(c, kCframeCurrentFrame);
    while (frame != 0) {
      if (thread.frames.size() >= kMaxFrames) {
        thread.truncated = true;
        return;
      }
      std::array<std::byte, kFrameRead> f{};
      if (!plausiblePointer(frame) || !read_(frame, f) ||
          static_cast<std::uint8_t>(f[kFrameOwner]) > kFrameOwnerMax) {
        thread.truncated = true;
        return;
      }
      const auto code_address = word(f, kFrameCode);
      const Code* code = codeAt(code_address);
      if (code == nullptr) {
        thread.truncated = true;
        return;
      }
      const auto prev_instr = word(f, kFramePrevInstr);
      const auto first = code_address + kCodeInstructions;
      // A frame whose first instruction has not run yet (prev_instr just before the code) is
      // not shown, as CPython itself does not show an incomplete frame.
      if (prev_instr >= first && (prev_instr - first) % 2 == 0 &&
          (prev_instr - first) / 2 < code->code_units) {
        StackFrame out;
        out.function = code->function;
        out.file = code->file;
        const auto line = pythonLineOf(code->linetable, code->first_line, (prev_instr - first) / 2);
        out.line = line && *line > 0 ? static_cast<std::uint32_t>(*line) : 0;
        thread.frames.push_back(std::move(out));
      }
      frame = word(f, kFramePrevious);
    }
  }

  /// The code object at `address`, read once per state: nullptr when it is none.
  const Code* codeAt(std::uint64_t address) {
    if (auto it = codes_.find(address); it != codes_.end())
      return it->second ? &*it->second : nullptr;
    auto& slot = codes_[address];
    std::array<std::byte, kCodeInstructions> bytes{};
    if (!plausiblePointer(address) || !read_(address, bytes) ||
        !isType(word(bytes, kObjectType), "code")) {
      return nullptr;
    }
    Code code;
    code.code_units = word(bytes, kVarSize);
    std::int32_t first_line = 0;
    std::memcpy(&first_line, bytes.data() + kCodeFirstLine, sizeof(first_line));
    code.first_line = first_line;
    auto file = unicode(word(bytes, kCodeFilename));
    auto name = unicode(word(bytes, kCodeQualname));
    if (!name) name = unicode(word(bytes, kCodeName));
    if (!file || !name || code.code_units > kMaxCodeUnits) return nullptr;
    code.file = std::move(*file);
    code.function = std::move(*name);
    code.linetable = bytesObject(word(bytes, kCodeLinetable));
    slot = std::move(code);
    return &*slot;
  }

  /// Whether the type object at `type` is named `name`; answered once per type.
  bool isType(std::uint64_t type, std::string_view name) {
    auto it = type_names_.find(type);
    if (it == type_names_.end()) {
      std::string found;
      std::array<std::byte, kTypeName + 8> t{};
      if (plausiblePointer(type) && read_(type, t)) {
        std::array<std::byte, 32> text{};
        const auto at = word(t, kTypeName);
        if (at >= 4096 && at < kUserTop && read_(at, text)) {
          const auto* chars = reinterpret_cast<const char*>(text.data());
          found.assign(chars, strnlen(chars, text.size()));
        }
      }
      it = type_names_.emplace(type, std::move(found)).first;
    }
    return it->second == name;
  }

  /// The text of the str object at `address` (a compact one, as code objects' names are).
  std::optional<std::string> unicode(std::uint64_t address) {
    std::array<std::byte, kCompactData> head{};
    if (!plausiblePointer(address) || !read_(address, std::span(head).first(kAsciiData))) {
      return std::nullopt;
    }
    const auto length = word(head, kUnicodeLength);
    std::uint32_t state = 0;
    std::memcpy(&state, head.data() + kUnicodeState, sizeof(state));
    const unsigned kind = (state >> 2) & 7;
    const bool compact = ((state >> 5) & 1) != 0;
    const bool ascii = ((state >> 6) & 1) != 0;
    if (!compact || length > kMaxStringBytes) return std::nullopt;
    if (ascii) {
      std::string out(length, '\0');
      if (!read_(address + kAsciiData, std::as_writable_bytes(std::span(out)))) return std::nullopt;
      return out;
    }
    if (!read_(address, head)) return std::nullopt;
    const auto utf8 = word(head, kCompactUtf8);
    const auto utf8_length = word(head, kCompactUtf8Length);
    if (utf8 != 0 && utf8_length <= kMaxStringBytes * 4) {
      std::string out(utf8_length, '\0');
      if (!read_(utf8, std::as_writable_bytes(std::span(out)))) return std::nullopt;
      return out;
    }
    if (kind != 1 && kind != 2 && kind != 4) return std::nullopt;
    std::vector<std::byte> data(length * kind);
    if (!read_(address + kCompactData, data)) return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < length; ++i) {
      std::uint32_t c = 0;
      std::memcpy(&c, data.data() + i * kind, kind);
      appendUtf8(out, c);
    }
    return out;
  }

  /// The contents of the bytes object at `address`, at most kMaxLinetable of them.
  std::vector<std::byte> bytesObject(std::uint64_t address) {
    std::array<std::byte, kBytesData> head{};
    if (!plausiblePointer(address) || !read_(address, head)) return {};
    std::vector<std::byte> out(std::min<std::uint64_t>(word(head, kVarSize), kMaxLinetable));
    if (!read_(address + kBytesData, out)) return {};
    return out;
  }

  const MemoryReader& read_;
  const std::function<bool(std::int32_t)>& is_thread_;
  std::map<std::uint64_t, std::optional<Code>> codes_;
  std::map<std::uint64_t, std::string> type_names_;
};

/// The last path component of `path`.
std::string_view baseName(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

const PythonThread* PythonState::byNativeId(std::int32_t tid) const {
  for (const auto& t : threads) {
    if (t.native_id == tid) return &t;
  }
  return nullptr;
}

const PythonThread* PythonState::byThreadId(std::uint64_t thread_id) const {
  for (const auto& t : threads) {
    if (t.thread_id == thread_id) return &t;
  }
  return nullptr;
}

PythonState readPythonState(const PythonAnchors& anchors, const MemoryReader& read,
                            const std::function<bool(std::int32_t)>& is_thread) {
  return Reader(read, is_thread).run(anchors);
}

std::optional<PythonState> readPythonStateIfAny(
    const PythonAnchors& anchors, const MemoryReader& read,
    const std::function<bool(std::int32_t)>& is_thread) {
  if (anchors.runtime == 0 && anchors.version == 0) return std::nullopt;
  return readPythonState(anchors, read, is_thread);
}

std::optional<int> pythonLineOf(std::span<const std::byte> table, int first_line,
                                std::size_t index) {
  // Objects/locations.md of 3.11: entries that each start with a byte whose top bit is set,
  // bits 3-6 the kind of entry, bits 0-2 the number of code units it covers minus one; the
  // line moves by a delta that the kind gives or a signed varint after that byte says.
  constexpr unsigned kNoLocation = 15;
  constexpr unsigned kLong = 14;
  constexpr unsigned kNoColumns = 13;
  constexpr unsigned kOneLine0 = 10;
  constexpr unsigned kOneLine2 = 12;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned>(table[i]); };
  const auto signedVarint = [&](std::size_t at) {
    std::uint64_t value = 0;
    unsigned shift = 0;
    for (; at < table.size() && shift < 32; shift += 6) {
      const auto b = byte(at++);
      value |= std::uint64_t{b & 63} << shift;
      if ((b & 64) == 0) break;
    }
    const auto magnitude = static_cast<std::int64_t>(value >> 1);
    return (value & 1) != 0 ? -magnitude : magnitude;
  };
  std::int64_t line = first_line;
  std::size_t unit = 0;
  std::size_t at = 0;
  while (at < table.size()) {
    const auto head = byte(at);
    if ((head & 128) == 0) return std::nullopt;  // not at an entry: no table of 3.11
    const unsigned kind = (head >> 3) & 15;
    if (kind == kLong || kind == kNoColumns) {
      line += signedVarint(at + 1);
    } else if (kind >= kOneLine0 && kind <= kOneLine2) {
      line += kind - kOneLine0;
    }
    unit += (head & 7) + 1;
    if (index < unit) {
      if (kind == kNoLocation) return std::nullopt;
      return static_cast<int>(line);
    }
    do {
      ++at;
    } while (at < table.size() && (byte(at) & 128) == 0);
  }
  return std::nullopt;
}

std::optional<std::string> pythonLibraryWait(const StackFrame& innermost) {
  const auto file = baseName(innermost.file);
  const std::string_view function = innermost.function;
  const bool futures = innermost.file.find("/concurrent/futures/") != std::string::npos;
  if (file == "threading.py") {
    if (function == "Thread._wait_for_tstate_lock" || function == "_wait_for_tstate_lock") {
      return "Python threading.Thread.join";
    }
    if (function == "_shutdown") return "Python threading._shutdown (joining threads at exit)";
    return "Python threading." + innermost.function;
  }
  if (file == "queue.py") return "Python queue." + innermost.function;
  if (futures && file == "thread.py" && function == "_worker") {
    return "Python concurrent.futures worker (idle)";
  }
  if (futures) return "Python concurrent.futures." + innermost.function;
  return std::nullopt;
}

}  // namespace wctmon::linux_platform
