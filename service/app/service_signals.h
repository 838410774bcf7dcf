#pragma once

namespace wctmon::app {

// The signals that stop or reload the service (SIGTERM, SIGINT, SIGHUP) end a process whose
// handlers are not yet installed: one sent in the service's first milliseconds (while its
// libraries load, or while it starts) killed it with 129 or 143. They are held pending instead,
// from before `wctmon run` execs the service (a blocked mask survives exec) and from the top of
// wctmond's main, until its loop handles them, then released: the pending ones are handled then.
// One implementation per platform, chosen by CMake (nothing to do on Windows, where the console's
// and the SCM's events are handled from the start).

/// Blocks the service's signals in the calling thread (and the threads it creates later), and
/// ignores SIGPIPE for the process: a peer that goes while the service writes to it (an API
/// client, a pipe) is an error of that write, never the end of the service. systemd ignores it
/// for its services; a shell or a container does not.
void holdServiceSignals();

/// Unblocks them in the calling thread; a signal that came meanwhile is delivered now.
void releaseServiceSignals();

}  // namespace wctmon::app
