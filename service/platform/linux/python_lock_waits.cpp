// What a thread blocked in CPython's lock waits for, from the lock object its stack points to
// and its innermost Python frame; and the Python frames of a CPython process's blocked threads.
#include "platform/linux/python_lock_waits.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "model/format.h"
#include "platform/linux/glibc_sync.h"
#include "platform/linux/wait_classifier_internal.h"

namespace wctmon::linux_platform {
namespace {

/// Whether `p` may point to an object: a user-space address, aligned, neither the semaphore
/// itself nor a word of the stack that was searched.
bool maybeObject(std::uint64_t p, std::uint64_t sp, std::uint64_t sem) {
  constexpr std::uint64_t kUserTop = std::uint64_t{1} << 47;
  return p >= 0x10000 && p < kUserTop && p % 8 == 0 && p != sem &&
         (p < sp || p >= sp + kStackScanBytes);
}

/// The words of the first `n` bytes of `stack` (at `sp`) that may point to an object.
std::vector<std::uint64_t> stackWords(std::span<const std::byte> stack, std::size_t n,
                                      std::uint64_t sp, std::uint64_t sem) {
  std::vector<std::uint64_t> out;
  for (std::size_t at = 0; at + sizeof(std::uint64_t) <= n; at += sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, stack.data() + at, sizeof(word));
    if (maybeObject(word, sp, sem)) out.push_back(word);
  }
  return out;
}

}  // namespace

/// The lock object the thread waits on: a word of its stack (or, failing that, of its
/// registers) that points to one.
std::optional<PythonLockWaits::LockObject> PythonLockWaits::lockObject(const SyscallState& sc,
                                                                       std::int32_t tid,
                                                                       bool may_stop) {
  const std::uint64_t sem = sc.args[0];
  std::array<std::byte, kStackScanBytes> stack{};
  std::size_t n = lookup_.readStack(sc.sp, std::span(stack).first(kFirstStackBytes));
  auto found = lockObjectAmong(stackWords(stack, n, sc.sp, sem), sem);
  if (!found && n == kFirstStackBytes) {
    n += lookup_.readStack(sc.sp + n, std::span(stack).subspan(n));
    found = lockObjectAmong(stackWords(stack, n, sc.sp, sem), sem);
  }
  if (!found && may_stop) {
    std::vector<std::uint64_t> registers = lookup_.parkedThreadRegisters(tid, sem);
    std::erase_if(registers, [&](std::uint64_t p) { return !maybeObject(p, sc.sp, sem); });
    found = lockObjectAmong(registers, sem);
  }
  return found;
}

/// The first of `candidates` (innermost first) that is a CPython lock object on `sem`. Their
/// headers are read together, in the windows a futex word is read in.
std::optional<PythonLockWaits::LockObject> PythonLockWaits::lockObjectAmong(
    const std::vector<std::uint64_t>& candidates, std::uint64_t sem) {
  // PyObject_HEAD (refcount, type), then the lock; an RLock's owner and count after it.
  constexpr std::size_t kType = kFutexWindowBefore + 8;
  constexpr std::size_t kLock = kFutexWindowBefore + 16;
  constexpr std::size_t kOwner = kFutexWindowBefore + 24;
  constexpr std::size_t kCount = kFutexWindowBefore + 32;
  std::vector<std::uint64_t> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.empty()) return std::nullopt;
  std::vector<FutexWindow> windows;
  if (lookup_.readFutexWindows(sorted, windows) != MemoryAccess::kOk) return std::nullopt;
  const auto at = [](const FutexWindow& w, std::size_t offset) {
    std::uint64_t v = 0;
    std::memcpy(&v, w.bytes.data() + offset, sizeof(v));
    return v;
  };
  for (const auto p : candidates) {
    const auto& w = windows[static_cast<std::size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), p) - sorted.begin())];
    if (w.valid_begin > kType || w.valid_end < kCount + 8 || at(w, kLock) != sem) continue;
    const auto& type = typeName(at(w, kType));
    if (type != "_thread.RLock" && type != "_thread.lock" && type != "_queue.SimpleQueue") {
      continue;
    }
    return LockObject{p, type, at(w, kOwner), at(w, kCount)};
  }
  return std::nullopt;
}

/// The tp_name of the type object at `type`, read once per classification.
const std::string& PythonLockWaits::typeName(std::uint64_t type) {
  auto it = type_names_.find(type);
  if (it != type_names_.end()) return it->second;
  constexpr std::uint64_t kTpName = 24;
  std::string name;
  std::array<std::byte, 8> pointer{};
  if (lookup_.readMemory(type + kTpName, pointer) == MemoryAccess::kOk) {
    std::uint64_t at = 0;
    std::memcpy(&at, pointer.data(), sizeof(at));
    name = lookup_.readString(at).value_or("");
  }
  return type_names_.emplace(type, std::move(name)).first->second;
}

/// The TID of the thread whose pthread_t is `thread`: as the interpreter records it, or else
/// from glibc's struct pthread when that validates.
std::optional<std::int32_t> PythonLockWaits::tidOfPthread(std::uint64_t thread,
                                                          const PythonState* python) {
  if (python != nullptr && python->readable()) {
    if (const auto* t = python->byThreadId(thread)) return t->native_id;
  }
  std::array<std::byte, 8> self{};
  std::array<std::byte, 4> tid_bytes{};
  std::uint64_t self_word = 0;
  std::int32_t tid = 0;
  if (thread < 4096 || lookup_.readMemory(thread, self) != MemoryAccess::kOk ||
      lookup_.readMemory(thread + kPthreadTidOffset, tid_bytes) != MemoryAccess::kOk) {
    return std::nullopt;
  }
  std::memcpy(&self_word, self.data(), sizeof(self_word));
  std::memcpy(&tid, tid_bytes.data(), sizeof(tid));
  if (self_word != thread || tid <= 0) return std::nullopt;
  const auto host = lookup_.hostTid(tid);
  if (!host || !lookup_.hasThread(*host)) return std::nullopt;
  return *host;
}

const PythonState* PythonLockWaits::pythonState() {
  if (!python_asked_) {
    python_asked_ = true;
    python_ = lookup_.pythonState();
  }
  return python_;
}

void PythonLockWaits::refine(const TaskReading& thread, WaitObject& w) {
  const auto& sc = *thread.syscall;
  const auto tid = thread.sample.id.tid.value;
  const PythonState* python = pythonState();
  const PythonThread* frames =
      python != nullptr && python->readable() ? python->byNativeId(tid) : nullptr;
  const StackFrame* innermost =
      frames != nullptr && !frames->frames.empty() ? &frames->frames.front() : nullptr;
  const auto library = innermost != nullptr ? pythonLibraryWait(*innermost) : std::nullopt;
  std::string where;
  if (innermost != nullptr) {
    where = "; innermost Python frame: " + innermost->function + " at " + innermost->file +
            (innermost->line > 0 ? ":" + std::to_string(innermost->line) : "");
  }
  // A thread parked for good that its frames do not place in the standard library may be
  // stopped a moment for its registers (the object's address may be only there).
  const bool may_stop = sc.args[3] == 0 && innermost != nullptr && !library;
  const auto object = lockObject(sc, tid, may_stop);
  const auto condition = [&](const std::string& kind, const std::string& what) {
    w.type = ObjectType::kCondition;
    w.status = ObjectStatus::kBlocked;
    w.name = kind + " " + hexString(sc.args[0]);
    w.detail = what + where;
  };
  if (object && object->type == "_thread.RLock") {
    w.type = ObjectType::kMutex;
    w.name = "Python threading.RLock " + hexString(object->address);
    const auto owner = object->owner != 0 ? tidOfPthread(object->owner, python) : std::nullopt;
    if (owner && *owner != tid) {
      w.status = ObjectStatus::kOwned;
      w.owner_threads.push_back(ThreadRef{pid_, Tid{*owner}});
      w.detail = "threading.RLock held by thread " + std::to_string(*owner) + " (taken " +
                 std::to_string(object->count) + " time(s)), as the RLock records it" + where;
    } else if (object->owner == 0) {
      w.status = ObjectStatus::kUnknown;
      w.detail = "threading.RLock, free at this read (its holder was releasing it)" + where;
    } else if (python != nullptr && python->readable()) {
      w.status = ObjectStatus::kAbandoned;
      w.detail = "threading.RLock whose owner (pthread " + hexString(object->owner) +
                 ") is no thread of the interpreter: it exited holding it" + where;
    } else {
      w.status = ObjectStatus::kUnknown;
      w.detail = "threading.RLock whose owner (pthread " + hexString(object->owner) +
                 ") is not known" + where;
    }
    return;
  }
  if (object && object->type == "_queue.SimpleQueue") {
    condition("Python queue.SimpleQueue.get",
              "waits for an item of a queue.SimpleQueue; a queue has no owner");
    return;
  }
  if (library) {
    condition(*library,
              "a wait of Python's standard library for a condition, event, queue, semaphore, "
              "barrier or thread: nobody owns it");
    return;
  }
  if (object && object->type == "_thread.lock" && innermost != nullptr) {
    w.type = ObjectType::kUnownedLock;
    w.status = ObjectStatus::kUnknown;
    w.name = "Python threading.Lock " + hexString(object->address);
    w.detail = "threading.Lock records no owner, so who holds it is not known" + where;
    return;
  }
  if (python != nullptr && !python->readable()) {
    w.detail = w.detail.str() + "; " + python->error;
  } else {
    w.detail = w.detail.str() + where;
  }
}

void PythonLockWaits::attachFrames(std::span<TaskReading> threads) const {
  if (python_ == nullptr || !python_->readable()) return;
  for (auto& thread : threads) {
    if (!thread.sample.wait || thread.sample.runtime_stack) continue;
    const auto* t = python_->byNativeId(thread.sample.id.tid.value);
    if (t == nullptr || t->frames.empty()) continue;
    thread.sample.runtime_stack =
        RuntimeStack{"Python", t->frames,
                     std::string("the CPython interpreter's state, read from its memory") +
                         (t->truncated ? "; not all frames were readable" : "")};
  }
}

}  // namespace wctmon::linux_platform
