#include "platform/linux/hot_spot_sampler.h"

#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "os/unique_fd.h"
#include "platform/linux/demangle.h"
#include "platform/linux/target_modules.h"

namespace wctmon::linux_platform {
namespace {

/// Pages of the ring buffer after its header page: 64 KiB, room for ~2,700 samples, more than
/// two windows of a second at kFrequency.
constexpr std::size_t kDataPages = 16;

/// A perf sample as sample_type = PERF_SAMPLE_IP writes it.
struct IpSample {
  perf_event_header header;
  std::uint64_t ip;
};

/// The mapped ring buffer of a perf event, unmapped once.
class RingBuffer {
 public:
  RingBuffer(int fd, std::size_t bytes) : bytes_(bytes) {
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    base_ = m == MAP_FAILED ? nullptr : static_cast<std::byte*>(m);
  }
  ~RingBuffer() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;
  [[nodiscard]] bool ok() const { return base_ != nullptr; }

  /// The instruction pointers written since the last drain.
  std::vector<std::uint64_t> drain() {
    auto* header = reinterpret_cast<perf_event_mmap_page*>(base_);
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::byte* data = base_ + page;
    const std::size_t size = bytes_ - page;
    const std::uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
    std::uint64_t tail = header->data_tail;
    std::vector<std::uint64_t> out;
    while (tail + sizeof(perf_event_header) <= head) {
      perf_event_header h{};
      copyOut(data, size, tail, &h, sizeof(h));
      if (h.size == 0) break;
      if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(IpSample)) {
        IpSample s{};
        copyOut(data, size, tail, &s, sizeof(s));
        out.push_back(s.ip);
      }
      tail += h.size;
    }
    __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
    return out;
  }

 private:
  /// Copies `n` bytes at ring offset `at`, across the end of the ring.
  static void copyOut(const std::byte* data, std::size_t size, std::uint64_t at, void* to,
                      std::size_t n) {
    const std::size_t start = at % size;
    const std::size_t first = std::min(n, size - start);
    std::memcpy(to, data + start, first);
    std::memcpy(static_cast<std::byte*>(to) + first, data, n - first);
  }

  std::byte* base_ = nullptr;
  std::size_t bytes_;
};

/// Separate debug files are not looked for: a profile names functions from the files' own
/// symbol tables, fast, and the same way every time.
int noDebuginfo(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                char**) {
  return -1;
}

/// Samples counted by function.
std::vector<HotFunction> byFunction(Dwfl* dwfl, const std::vector<std::uint64_t>& ips) {
  std::map<std::pair<std::string, std::string>, std::uint32_t> counts;
  std::map<std::uint64_t, std::pair<std::string, std::string>> named;
  for (const auto ip : ips) {
    auto it = named.find(ip);
    if (it == named.end()) {
      std::string module = "?";
      std::string function;
      Dwfl_Module* m = dwfl != nullptr ? dwfl_addrmodule(dwfl, ip) : nullptr;
      if (m != nullptr) {
        Dwarf_Addr low = 0;
        const char* name =
            dwfl_module_info(m, nullptr, &low, nullptr, nullptr, nullptr, nullptr, nullptr);
        if (name != nullptr) module = std::filesystem::path(name).filename().string();
        GElf_Off offset = 0;
        GElf_Sym sym{};
        const char* symbol = dwfl_module_addrinfo(m, ip, &offset, &sym, nullptr, nullptr, nullptr);
        if (symbol != nullptr) {
          function = demangle(symbol);
        } else {
          char text[32];
          std::snprintf(text, sizeof(text), "+0x%llx",
                        static_cast<unsigned long long>((ip - low) & ~0xfffULL));
          function = module + text;
        }
      } else {
        char text[32];
        std::snprintf(text, sizeof(text), "0x%llx",
                      static_cast<unsigned long long>(ip & ~0xfffULL));
        function = text;
      }
      it = named.emplace(ip, std::make_pair(module, function)).first;
    }
    ++counts[it->second];
  }
  std::vector<HotFunction> out;
  for (const auto& [name, n] : counts) out.push_back(HotFunction{name.second, name.first, n});
  std::sort(out.begin(), out.end(), [](const HotFunction& a, const HotFunction& b) {
    return a.samples > b.samples || (a.samples == b.samples && a.function < b.function);
  });
  return out;
}

}  // namespace

Result<ThreadProfile> PerfHotSpotSampler::profile(ThreadRef thread,
                                                  std::chrono::milliseconds window) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.freq = 1;
  attr.sample_freq = kFrequency;
  attr.sample_type = PERF_SAMPLE_IP;
  // User space only: where the thread's own code spins. (A kernel frame would say "in a
  // system call", which the sample's wait already tells.)
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  UniqueFd fd(static_cast<int>(
      ::syscall(SYS_perf_event_open, &attr, thread.tid.value, -1, -1, PERF_FLAG_FD_CLOEXEC)));
  if (!fd.valid()) {
    const int e = errno;
    return makeError(
        e == ESRCH ? ErrorCode::kNoSuchThread : ErrorCode::kUnsupported,
        std::string("cannot sample the thread (perf_event_open): ") + std::strerror(e));
  }
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  RingBuffer ring(fd.get(), page * (1 + kDataPages));
  if (!ring.ok()) {
    return makeError(ErrorCode::kUnsupported,
                     std::string("cannot map the sampling buffer: ") + std::strerror(errno));
  }
  ThreadProfile out;
  out.window = window;
  std::this_thread::sleep_for(window);
  const auto first = ring.drain();
  std::this_thread::sleep_for(window);
  const auto second = ring.drain();
  fd.reset();

  static const Dwfl_Callbacks kCallbacks = {findTargetModule, noDebuginfo, nullptr, nullptr};
  const TargetModules modules(thread.pid.value);
  std::unique_ptr<Dwfl, decltype(&dwfl_end)> dwfl(dwfl_begin(&kCallbacks), &dwfl_end);
  if (dwfl && (dwfl_linux_proc_report(dwfl.get(), thread.pid.value) != 0 ||
               dwfl_report_end(dwfl.get(), nullptr, nullptr) != 0)) {
    dwfl.reset();  // the process is gone: addresses stay unnamed
  }
  out.first = byFunction(dwfl.get(), first);
  out.second = byFunction(dwfl.get(), second);
  return out;
}

void PerfHotSpotSampler::asyncProfile(ThreadRef thread, std::chrono::milliseconds window,
                                      std::function<void(Result<ThreadProfile>)> done) {
  queue_.push(thread, window, std::move(done));
}

}  // namespace wctmon::linux_platform
