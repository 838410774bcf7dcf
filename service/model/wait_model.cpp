#include "model/wait_model.h"

#include <algorithm>

#include "model/enum_names.h"
#include "model/snapshot.h"

namespace wctmon {

// The display names are string literals: their views end in a NUL.
const char* toString(ObjectType type) { return namesOf(type).display.data(); }

const char* toString(ObjectStatus status) { return namesOf(status).display.data(); }

bool Deadlock::crossProcess() const {
  return std::any_of(threads.begin(), threads.end(),
                     [&](const ThreadRef& t) { return t.pid != threads.front().pid; });
}

bool leadsSomewhere(const WaitChain& chain) {
  if (chain.nodes.size() > 2 || chain.is_cycle) return true;
  if (chain.nodes.size() < 2) return false;
  const auto& object = chain.nodes[1];
  return object.status == ObjectStatus::kOwned || object.status == ObjectStatus::kAbandoned ||
         object.type == ObjectType::kKernelWait || object.type == ObjectType::kFifoOpen ||
         object.type == ObjectType::kUnownedLock;
}

bool sameWaitObject(const WaitObject& a, const WaitObject& b) {
  // The time left of a timed wait shrinks between reads of the same wait: it is not compared.
  return a.type == b.type && a.status == b.status && a.key == b.key && a.name == b.name &&
         a.owner_threads == b.owner_threads && a.owner_processes == b.owner_processes &&
         a.timeout.has_value() == b.timeout.has_value();
}

bool sameBlockedWait(const ThreadSample& before, const ThreadSample& after) {
  return before.id == after.id && before.status == ObjectStatus::kBlocked &&
         after.status == ObjectStatus::kBlocked && before.state == after.state &&
         before.context_switches.has_value() && before.context_switches == after.context_switches &&
         before.wait.has_value() == after.wait.has_value() &&
         (!before.wait || sameWaitObject(*before.wait, *after.wait));
}

std::vector<RuntimeStackOf> runtimeStacksOf(std::span<const ThreadRef> wanted,
                                            std::span<const ThreadSample> threads) {
  std::vector<RuntimeStackOf> out;
  for (const auto& t : threads) {
    if (t.runtime_stack && std::find(wanted.begin(), wanted.end(), t.id) != wanted.end()) {
      out.emplace_back(t.id, *t.runtime_stack);
    }
  }
  return out;
}

void attachRuntimeStacks(std::vector<ThreadCapture>& captures,
                         std::span<const RuntimeStackOf> stacks) {
  for (auto& capture : captures) {
    const auto it = std::find_if(stacks.begin(), stacks.end(), [&](const RuntimeStackOf& s) {
      return s.first == capture.thread;
    });
    if (it != stacks.end()) capture.runtime_stack = it->second;
  }
}

}  // namespace wctmon
