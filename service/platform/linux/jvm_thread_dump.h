#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/wait_model.h"

namespace wctmon::linux_platform {

/// A Java object a thread dump names: `<0x000000069ec19480> (a java.lang.Object)`.
struct JavaObjectRef {
  std::uint64_t address = 0;
  std::string class_name;
  friend bool operator==(const JavaObjectRef&, const JavaObjectRef&) = default;
};

/// How a Java thread waits, as its dump says.
enum class JavaWaitKind {
  kNone,
  /// `waiting to lock <…>`: entering a monitor (synchronized).
  kMonitorEnter,
  /// `waiting to re-lock in wait() <…>`: taking a monitor back after Object.wait.
  kMonitorReenter,
  /// `waiting on <…>`: in Object.wait, for a notify.
  kObjectWait,
  /// `parking to wait for <…>`: LockSupport.park, on a java.util.concurrent lock or condition.
  kPark,
};

/// One thread of a HotSpot thread dump (`jstack -l` / the attach mechanism's `threaddump -l`).
struct JavaThreadDump {
  std::string name;
  /// The OS thread (`nid`): the Linux TID. 0 for a thread without one.
  std::int32_t tid = 0;
  /// `java.lang.Thread.State`: "BLOCKED (on object monitor)", "WAITING (parking)", ...
  std::string state;
  /// Java frames, innermost first: function is `pkg.Class.method`, module the `java.base@17`
  /// part, file and line where the dump gives them.
  std::vector<StackFrame> frames;
  JavaWaitKind wait = JavaWaitKind::kNone;
  /// What the thread waits on; absent when it waits on nothing or the dump does not say.
  std::optional<JavaObjectRef> waits_on;
  /// Monitors the thread holds (a monitor it is in Object.wait on is released, so not held).
  std::vector<JavaObjectRef> monitors;
  /// java.util.concurrent locks it holds (`Locked ownable synchronizers`).
  std::vector<JavaObjectRef> synchronizers;
};

/// A parsed thread dump.
struct JavaDump {
  /// "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing)"; empty when
  /// the header is missing.
  std::string vm;
  std::vector<JavaThreadDump> threads;
};

/// Parses a HotSpot thread dump. Lines it does not know are skipped; the "Found one Java-level
/// deadlock" section (a repeat of what the threads say) is not read.
[[nodiscard]] JavaDump parseJavaThreadDump(std::string_view text);

/// The thread of `dump` that holds `object` (a monitor or a java.util.concurrent lock); nullptr
/// when none does.
[[nodiscard]] const JavaThreadDump* holderOf(const JavaDump& dump, std::uint64_t object);

}  // namespace wctmon::linux_platform
