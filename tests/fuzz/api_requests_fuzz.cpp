// Every request message a client can send, as the bytes that arrive on the wire: the first byte
// picks the method, the rest is its request. Each is decoded as gRPC decodes it, then checked as
// the service checks it before doing any work.
#include "api/requests.h"
#include "fuzz/fuzz_input.h"
#include "wctmon/v1/monitor.pb.h"

namespace {

template <typename Message>
bool decode(std::span<const std::uint8_t> bytes, Message& out) {
  return out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  fuzz::FuzzInput in(data, size);
  const auto method = in.take<std::uint8_t>() % 4;
  const auto bytes = in.rest();
  switch (method) {
    case 0: {
      v1::ListIncidentsRequest request;
      if (!decode(bytes, request)) break;
      if (auto page = api::incidentPageOf(request)) {
        WCTMON_FUZZ_CHECK(page->size > 0 && page->size <= api::kMaxPageSize);
        WCTMON_FUZZ_CHECK(page->query.limit == static_cast<std::size_t>(page->size) + 1);
      } else {
        WCTMON_FUZZ_CHECK(page.error().code == ErrorCode::kInvalidArgument);
      }
      break;
    }
    case 1: {
      v1::AddTargetRequest request;
      if (!decode(bytes, request)) break;
      auto target = api::targetOf(request.target(), Config{});
      WCTMON_FUZZ_CHECK(target || target.error().code == ErrorCode::kInvalidArgument);
      break;
    }
    case 2: {
      v1::AnalyzeProcessRequest request;
      if (!decode(bytes, request)) break;
      if (auto asked = api::analysisOf(request)) WCTMON_FUZZ_CHECK(asked->pid.value > 0);
      break;
    }
    default: {
      // The requests with no checks of their own still go through the decoder.
      v1::GetIncidentRequest get;
      v1::RemoveTargetRequest remove;
      v1::WatchIncidentsRequest watch;
      static_cast<void>(decode(bytes, get));
      static_cast<void>(decode(bytes, remove));
      static_cast<void>(decode(bytes, watch));
    }
  }
  return 0;
}
