// wctmon-store-fill STORE COUNT [CHAINS NODES]: adds COUNT resolved deadlock incidents, each
// with CHAINS chains of NODES named nodes (40 and 25 by default: some 370 KB of JSON each), to
// the store at STORE (made when missing). For the tests and benchmarks of what reads a large
// store: `wctmon incidents`, retention.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

#include "store/incident_store.h"

namespace {

using namespace wctmon;

int number(const char* text) {
  int value = 0;
  const std::string_view s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value >= 0 ? value : -1;
}

Incident incident(int n, int chains, int nodes) {
  Incident i;
  i.kind = IncidentKind::kDeadlock;
  i.state = IncidentState::kResolved;
  i.process = ProcessIdentity{Pid{1000 + n}, 42};
  i.process_name = "server";
  i.processes = {IncidentProcess{i.process, "server", ""}};
  i.target = "servers";
  i.signature = "deadlock " + std::to_string(n);
  i.summary = "deadlock of " + std::to_string(chains) + " threads in server (pid " +
              std::to_string(1000 + n) + ")";
  i.opened_at = std::chrono::system_clock::now() - std::chrono::hours(1);
  i.updated_at = i.opened_at;
  i.resolved_at = i.opened_at + std::chrono::minutes(1);
  i.resolution = "the cycle is gone";
  for (int c = 0; c < chains; ++c) {
    WaitChain chain;
    chain.start = ThreadRef{i.process.pid, Tid{2000 + c}};
    i.threads.push_back(chain.start);
    for (int k = 0; k < nodes; ++k) {
      WaitNode node;
      node.type = k % 2 == 0 ? ObjectType::kThread : ObjectType::kMutex;
      node.status = ObjectStatus::kBlocked;
      node.thread = ThreadRef{i.process.pid, Tid{2000 + (c + k) % chains}};
      node.thread_name = "worker-" + std::to_string(k) + std::string(60, 'w');
      node.process_name = "server";
      node.name = "pthread_mutex 0x55d0c0" + std::to_string(k) + std::string(60, 'm');
      chain.nodes.push_back(std::move(node));
    }
    chain.node_count = static_cast<std::uint32_t>(nodes);
    chain.truncated = true;
    i.chains.push_back(std::move(chain));
  }
  return i;
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc >= 3 ? number(argv[2]) : -1;
  const int chains = argc >= 4 ? number(argv[3]) : 40;
  const int nodes = argc >= 5 ? number(argv[4]) : 25;
  if ((argc != 3 && argc != 5) || count < 0 || chains <= 0 || nodes < 0) {
    std::fprintf(stderr, "usage: wctmon-store-fill STORE COUNT [CHAINS NODES]\n");
    return 2;
  }
  auto store = IncidentStore::open(argv[1]);
  if (!store) {
    std::fprintf(stderr, "wctmon-store-fill: %s\n", store.error().message.c_str());
    return 1;
  }
  for (int n = 0; n < count; ++n) {
    if (auto added = (*store)->insert(incident(n, chains, nodes)); !added) {
      std::fprintf(stderr, "wctmon-store-fill: %s\n", added.error().message.c_str());
      return 1;
    }
  }
  return 0;
}
