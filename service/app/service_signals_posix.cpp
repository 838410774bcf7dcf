#include <pthread.h>
#include <signal.h>

#include "app/service_signals.h"

namespace wctmon::app {
namespace {

void maskServiceSignals(int how) {
  sigset_t set;
  ::sigemptyset(&set);
  ::sigaddset(&set, SIGTERM);
  ::sigaddset(&set, SIGINT);
  ::sigaddset(&set, SIGHUP);
  ::pthread_sigmask(how, &set, nullptr);
}

}  // namespace

void holdServiceSignals() {
  ::signal(SIGPIPE, SIG_IGN);
  maskServiceSignals(SIG_BLOCK);
}

void releaseServiceSignals() { maskServiceSignals(SIG_UNBLOCK); }

}  // namespace wctmon::app
