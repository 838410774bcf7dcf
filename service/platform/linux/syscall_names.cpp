#include "platform/linux/syscall_names.h"

#include <sys/syscall.h>

#include <utility>

namespace wctmon::linux_platform {

std::string syscallName(long number) {
  static constexpr std::pair<long, const char*> kNames[] = {
      {SYS_read, "read"},
      {SYS_write, "write"},
      {SYS_open, "open"},
      {SYS_poll, "poll"},
      {SYS_pread64, "pread64"},
      {SYS_pwrite64, "pwrite64"},
      {SYS_readv, "readv"},
      {SYS_writev, "writev"},
      {SYS_select, "select"},
      {SYS_msgsnd, "msgsnd"},
      {SYS_msgrcv, "msgrcv"},
      {SYS_semop, "semop"},
      {SYS_semtimedop, "semtimedop"},
      {SYS_pause, "pause"},
      {SYS_nanosleep, "nanosleep"},
      {SYS_connect, "connect"},
      {SYS_accept, "accept"},
      {SYS_accept4, "accept4"},
      {SYS_sendto, "sendto"},
      {SYS_recvfrom, "recvfrom"},
      {SYS_sendmsg, "sendmsg"},
      {SYS_recvmsg, "recvmsg"},
      {SYS_sendmmsg, "sendmmsg"},
      {SYS_recvmmsg, "recvmmsg"},
      {SYS_wait4, "wait4"},
      {SYS_waitid, "waitid"},
      {SYS_fcntl, "fcntl"},
      {SYS_flock, "flock"},
      {SYS_fsync, "fsync"},
      {SYS_fdatasync, "fdatasync"},
      {SYS_futex, "futex"},
      {SYS_futex_waitv, "futex_waitv"},
      {SYS_epoll_wait, "epoll_wait"},
      {SYS_epoll_pwait, "epoll_pwait"},
      {SYS_epoll_pwait2, "epoll_pwait2"},
      {SYS_clock_nanosleep, "clock_nanosleep"},
      {SYS_openat, "openat"},
      {SYS_pselect6, "pselect6"},
      {SYS_ppoll, "ppoll"},
      {SYS_rt_sigsuspend, "rt_sigsuspend"},
      {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
      {SYS_io_getevents, "io_getevents"},
      {SYS_preadv, "preadv"},
      {SYS_pwritev, "pwritev"},
      {SYS_preadv2, "preadv2"},
      {SYS_pwritev2, "pwritev2"},
      {SYS_splice, "splice"},
      {SYS_tee, "tee"},
      {SYS_sendfile, "sendfile"},
      {SYS_copy_file_range, "copy_file_range"},
      {SYS_mq_timedsend, "mq_timedsend"},
      {SYS_mq_timedreceive, "mq_timedreceive"},
  };
  for (const auto& [nr, name] : kNames) {
    if (nr == number) return name;
  }
  return "syscall " + std::to_string(number);
}

}  // namespace wctmon::linux_platform
