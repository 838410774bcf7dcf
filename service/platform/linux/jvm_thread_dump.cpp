#include "platform/linux/jvm_thread_dump.h"

#include <charconv>

namespace wctmon::linux_platform {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<std::uint64_t> hexNumber(std::string_view s) {
  if (s.starts_with("0x")) s.remove_prefix(2);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 16);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return value;
}

/// `<0x000000069ec19480> (a java.lang.Object)`, at the start of `s`.
std::optional<JavaObjectRef> objectRef(std::string_view s) {
  s = trimmed(s);
  if (!s.starts_with('<')) return std::nullopt;
  const auto close = s.find('>');
  if (close == std::string_view::npos) return std::nullopt;
  auto address = hexNumber(s.substr(1, close - 1));
  if (!address) return std::nullopt;
  JavaObjectRef ref{*address, {}};
  const auto open = s.find("(a ", close);
  if (open != std::string_view::npos) {
    const auto end = s.find(')', open);
    ref.class_name = std::string(s.substr(
        open + 3, end == std::string_view::npos ? std::string_view::npos : end - open - 3));
  }
  return ref;
}

/// `"name" #12 daemon prio=5 os_prio=0 … tid=0x… nid=0x5347 waiting for monitor entry  […]`.
/// The name is printed as the program set it (quotes included): the fields are found from the
/// end.
std::optional<JavaThreadDump> threadHeader(std::string_view line) {
  const auto nid = line.rfind(" nid=0x");
  if (!line.starts_with('"') || nid == std::string_view::npos) return std::nullopt;
  JavaThreadDump t;
  auto id_text = line.substr(nid + 5);
  id_text = id_text.substr(0, id_text.find(' '));
  if (auto id = hexNumber(id_text)) t.tid = static_cast<std::int32_t>(*id);
  const auto fields = line.rfind(" os_prio=", nid);
  const auto name_end = line.rfind('"', fields == std::string_view::npos ? nid : fields);
  t.name = std::string(line.substr(1, name_end > 0 ? name_end - 1 : 0));
  return t;
}

/// `at pkg.Class.method(java.base@17.0.15/Thread.java:840)`, `(Native Method)`,
/// `(Unknown Source)`.
StackFrame javaFrame(std::string_view s) {
  StackFrame f;
  const auto open = s.rfind('(');
  if (open == std::string_view::npos || !s.ends_with(')')) {
    f.function = std::string(s);
    return f;
  }
  f.function = std::string(s.substr(0, open));
  auto where = s.substr(open + 1, s.size() - open - 2);
  if (const auto slash = where.find('/'); slash != std::string_view::npos) {
    f.module = std::string(where.substr(0, slash));
    where.remove_prefix(slash + 1);
  }
  if (const auto colon = where.rfind(':'); colon != std::string_view::npos) {
    std::uint32_t line = 0;
    const auto digits = where.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
    if (ec == std::errc() && end == digits.data() + digits.size()) {
      f.file = std::string(where.substr(0, colon));
      f.line = line;
      return f;
    }
  }
  // "Native Method", "Unknown Source": no file to give.
  if (where.ends_with(".java")) f.file = std::string(where);
  return f;
}

void readLockLine(JavaThreadDump& t, std::string_view s, bool synchronizers) {
  if (synchronizers) {
    if (auto ref = objectRef(s.substr(1))) t.synchronizers.push_back(std::move(*ref));
    return;
  }
  struct Form {
    std::string_view prefix;
    JavaWaitKind kind;
  };
  static constexpr Form kForms[] = {
      {"- waiting to lock ", JavaWaitKind::kMonitorEnter},
      {"- waiting to re-lock in wait() ", JavaWaitKind::kMonitorReenter},
      {"- waiting on ", JavaWaitKind::kObjectWait},
      {"- parking to wait for ", JavaWaitKind::kPark},
  };
  for (const auto& form : kForms) {
    if (!s.starts_with(form.prefix)) continue;
    // Only the innermost frame's wait is the thread's.
    if (t.wait == JavaWaitKind::kNone) {
      t.wait = form.kind;
      t.waits_on = objectRef(s.substr(form.prefix.size()));
    }
    return;
  }
  if (s.starts_with("- locked ")) {
    if (auto ref = objectRef(s.substr(9))) t.monitors.push_back(std::move(*ref));
  }
}

}  // namespace

JavaDump parseJavaThreadDump(std::string_view text) {
  JavaDump dump;
  JavaThreadDump* current = nullptr;
  bool synchronizers = false;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const auto raw = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (raw.starts_with("Full thread dump ")) {
      auto vm = raw.substr(17);
      if (vm.ends_with(':')) vm.remove_suffix(1);
      dump.vm = std::string(vm);
      continue;
    }
    // The sections after the threads repeat them ("Found one Java-level deadlock").
    if (raw.starts_with("JNI global refs") || raw.starts_with("Found ")) break;
    if (raw.starts_with('"')) {
      current = nullptr;
      synchronizers = false;
      if (auto header = threadHeader(raw)) {
        dump.threads.push_back(std::move(*header));
        current = &dump.threads.back();
      }
      continue;
    }
    if (current == nullptr) continue;
    const auto s = trimmed(raw);
    if (s.starts_with("java.lang.Thread.State: ")) {
      current->state = std::string(s.substr(24));
    } else if (s.starts_with("at ")) {
      current->frames.push_back(javaFrame(s.substr(3)));
    } else if (s.starts_with("Locked ownable synchronizers:")) {
      synchronizers = true;
    } else if (s.starts_with("- ")) {
      readLockLine(*current, s, synchronizers);
    }
  }
  // A monitor a thread waits on in Object.wait is listed as locked by an outer frame, but wait
  // released it.
  for (auto& t : dump.threads) {
    if (t.wait != JavaWaitKind::kObjectWait && t.wait != JavaWaitKind::kMonitorReenter) continue;
    if (!t.waits_on) continue;
    std::erase_if(t.monitors,
                  [&](const JavaObjectRef& m) { return m.address == t.waits_on->address; });
  }
  return dump;
}

const JavaThreadDump* holderOf(const JavaDump& dump, std::uint64_t object) {
  for (const auto& t : dump.threads) {
    for (const auto& m : t.monitors) {
      if (m.address == object) return &t;
    }
    for (const auto& s : t.synchronizers) {
      if (s.address == object) return &t;
    }
  }
  return nullptr;
}

}  // namespace wctmon::linux_platform
