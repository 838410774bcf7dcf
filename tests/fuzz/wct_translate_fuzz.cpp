// WCT's answers translated into the core's model: GetThreadWaitChain's WAITCHAIN_NODE_INFO nodes
// (whose names, ids and times another process's objects decide) with every status it reports.
// Windows only: run under Wine by the replay driver's mutation mode, libFuzzer being absent.
#include <array>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "platform/windows/wct_translate.h"

namespace wctmon::windows_platform {
namespace {

constexpr std::array<DWORD, 7> kStatuses = {
    ERROR_SUCCESS,          ERROR_MORE_DATA,         kErrorTooManyThreads, ERROR_ACCESS_DENIED,
    ERROR_OBJECT_NOT_FOUND, ERROR_INVALID_PARAMETER, ERROR_CANCELLED};

WAITCHAIN_NODE_INFO node(fuzz::FuzzInput& in, DWORD pid, std::span<const DWORD> tids) {
  WAITCHAIN_NODE_INFO n;
  const auto raw = in.bytes(sizeof(n));
  std::memset(&n, 0, sizeof(n));
  std::memcpy(&n, raw.data(), raw.size());
  // Mostly the types and statuses WCT has (and a few past them), threads of the process.
  if (in.flag()) n.ObjectType = static_cast<WCT_OBJECT_TYPE>(1 + in.below(WctUnknownType + 2));
  if (in.flag()) n.ObjectStatus = static_cast<WCT_OBJECT_STATUS>(1 + in.below(WctStatusError + 1));
  if (n.ObjectType == WctThreadType && in.flag()) {
    n.ThreadObject.ProcessId = in.flag() ? pid : pid + 1;
    n.ThreadObject.ThreadId = tids.empty() ? 0 : tids[in.below(tids.size())];
  }
  return n;
}

}  // namespace
}  // namespace wctmon::windows_platform

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  using namespace wctmon::windows_platform;
  fuzz::FuzzInput in(data, size);
  ProcessThreads process;
  process.pid = Pid{static_cast<std::int32_t>(100 + in.below(4))};
  process.name = in.text(32);
  process.start_time = in.take<std::uint64_t>();
  process.tids.resize(1 + in.below(6));
  for (auto& tid : process.tids) tid = 1000 + static_cast<DWORD>(in.below(16));
  process.thread_names.resize(in.below(process.tids.size() + 1));
  for (auto& name : process.thread_names) name = in.text(16);
  const bool out_of_proc = in.flag();

  std::vector<WctThreadChain> chains(process.tids.size());
  for (std::size_t i = 0; i < chains.size(); ++i) {
    auto& chain = chains[i];
    chain.tid = process.tids[i];
    const auto pick = in.take<std::uint8_t>();
    chain.status = pick < 240 ? kStatuses[pick % kStatuses.size()] : in.take<DWORD>();
    chain.is_cycle = in.flag();
    chain.nodes.resize(in.below(kWctMaxNodeCount + 1));
    for (auto& n : chain.nodes) {
      n = node(in, static_cast<DWORD>(process.pid.value), process.tids);
    }
    // Most chains start at their thread, as WCT's do.
    if (!chain.nodes.empty() && in.flag()) {
      chain.nodes[0].ObjectType = WctThreadType;
      chain.nodes[0].ThreadObject.ThreadId = chain.tid;
      chain.nodes[0].ThreadObject.ProcessId = static_cast<DWORD>(process.pid.value);
    }
  }
  const auto snapshot = snapshotFromChains(process, chains, out_of_proc);
  WCTMON_FUZZ_CHECK(!snapshot.processes.empty() && snapshot.processes[0].pid == process.pid);
  WCTMON_FUZZ_CHECK(snapshot.processes[0].threads.size() == chains.size());
  WCTMON_FUZZ_CHECK(out_of_proc || snapshot.processes.size() == 1);
  return 0;
}
