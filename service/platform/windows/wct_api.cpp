#include "platform/windows/wct_api.h"

#include <mutex>

namespace wctmon::windows_platform {
namespace {

class SystemWctApi final : public WctApi {
 public:
  HWCT open(DWORD flags, PWAITCHAINCALLBACK callback) override {
    return ::OpenThreadWaitChainSession(flags, callback);
  }

  void close(HWCT session) override { ::CloseThreadWaitChainSession(session); }

  BOOL getChain(HWCT session, DWORD_PTR context, DWORD flags, DWORD tid, LPDWORD count,
                PWAITCHAIN_NODE_INFO nodes, LPBOOL is_cycle) override {
    return ::GetThreadWaitChain(session, context, flags, tid, count, nodes, is_cycle);
  }

  bool registerComCallbacks() override {
    // Once per process: WCT keeps the callbacks for every session.
    std::call_once(com_once_, [this] {
      HMODULE ole32 = ::LoadLibraryW(L"ole32.dll");
      if (ole32 == nullptr) return;
      // Undocumented exports of ole32, named by the WCT reference; kept loaded for good.
      auto call_state = reinterpret_cast<PCOGETCALLSTATE>(
          reinterpret_cast<void*>(::GetProcAddress(ole32, "CoGetCallState")));
      auto activation_state = reinterpret_cast<PCOGETACTIVATIONSTATE>(
          reinterpret_cast<void*>(::GetProcAddress(ole32, "CoGetActivationState")));
      if (call_state == nullptr || activation_state == nullptr) return;
      ::RegisterWaitChainCOMCallback(call_state, activation_state);
      com_registered_ = true;
    });
    return com_registered_;
  }

 private:
  std::once_flag com_once_;
  bool com_registered_ = false;
};

}  // namespace

std::unique_ptr<WctApi> makeSystemWctApi() { return std::make_unique<SystemWctApi>(); }

}  // namespace wctmon::windows_platform
