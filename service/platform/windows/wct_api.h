#pragma once

// Wait Chain Traversal at its API boundary: the four calls the WCT source makes, behind an
// interface so that tests can script every documented outcome (Wine's own WCT is a stub that
// refuses to open a session) and deliver results asynchronously, as Windows does.

#include <windows.h>
// wct.h needs windows.h first.
#include <wct.h>

#include <memory>

namespace wctmon::windows_platform {

// Flags of OpenThreadWaitChainSession and GetThreadWaitChain, as documented; mingw-w64's wct.h
// declares the functions but not these.
inline constexpr DWORD kWctAsyncOpenFlag = 0x1;
inline constexpr DWORD kWctOutOfProcFlag = 0x1;
inline constexpr DWORD kWctOutOfProcComFlag = 0x2;
inline constexpr DWORD kWctOutOfProcCsFlag = 0x4;
inline constexpr DWORD kWctNetworkIoFlag = 0x8;
/// The most nodes GetThreadWaitChain returns for one thread (WCT_MAX_NODE_COUNT).
inline constexpr DWORD kWctMaxNodeCount = 16;
/// ERROR_TOO_MANY_THREADS, which mingw-w64's winerror.h lacks: the chain passes through more
/// threads than WCT follows (the nodes returned are still valid).
inline constexpr DWORD kErrorTooManyThreads = 565;

/// The WCT calls. Each reports failure as Windows does: a null handle or FALSE, the reason in
/// GetLastError() of the calling thread.
class WctApi {
 public:
  virtual ~WctApi() = default;

  /// OpenThreadWaitChainSession: with kWctAsyncOpenFlag, results of GetThreadWaitChain come to
  /// `callback` on WCT's own thread.
  [[nodiscard]] virtual HWCT open(DWORD flags, PWAITCHAINCALLBACK callback) = 0;

  /// CloseThreadWaitChainSession: requests still pending end with ERROR_CANCELLED.
  virtual void close(HWCT session) = 0;

  /// GetThreadWaitChain: in an asynchronous session FALSE with ERROR_IO_PENDING means the result
  /// comes to the session's callback with `context`; `count`, `nodes` and `is_cycle` must stay
  /// valid until then.
  [[nodiscard]] virtual BOOL getChain(HWCT session, DWORD_PTR context, DWORD flags, DWORD tid,
                                      LPDWORD count, PWAITCHAIN_NODE_INFO nodes,
                                      LPBOOL is_cycle) = 0;

  /// RegisterWaitChainCOMCallback with ole32's CoGetCallState and CoGetActivationState, which
  /// WCT_OUT_OF_PROC_COM_FLAG needs; false when ole32 does not export them.
  [[nodiscard]] virtual bool registerComCallbacks() = 0;
};

/// The system's WCT (advapi32).
[[nodiscard]] std::unique_ptr<WctApi> makeSystemWctApi();

}  // namespace wctmon::windows_platform
