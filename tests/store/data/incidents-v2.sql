BEGIN TRANSACTION;
CREATE TABLE incidents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('deadlock', 'hang')),
  state TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
  pid INTEGER NOT NULL,
  process_start_time INTEGER NOT NULL,
  process_name TEXT NOT NULL,
  target TEXT NOT NULL,
  signature TEXT NOT NULL,
  threads TEXT NOT NULL,
  spurs TEXT NOT NULL,
  opened_at_ns INTEGER NOT NULL,
  updated_at_ns INTEGER NOT NULL,
  resolved_at_ns INTEGER,
  resolution TEXT NOT NULL,
  summary TEXT NOT NULL,
  chains TEXT NOT NULL,
  evidence TEXT NOT NULL
, processes TEXT NOT NULL DEFAULT '');
INSERT INTO "incidents" VALUES(1,'deadlock','resolved',18898,1105632,'wctmon-fixture','fixtures','deadlock [18898:18901] [18898:18902]','18898:18901 18898:18902','18898:18898',1795432775681208039,1795432779635762076,1795432779635762076,'the process exited','deadlock of 2 threads in wctmon-fixture (pid 18898): [18898:18901] a, [18898:18902] b','[
  {
    "pid": 18898,
    "tid": 18901,
    "nodes": [
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18901,
        "thread_name": "a",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1268",
        "context_switches": "1",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_MUTEX",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "0x55a37d340a80",
        "alertable": true,
        "owner_pids": [],
        "detail": "pthread_mutex (normal)"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18902,
        "thread_name": "b",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1264",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_MUTEX",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "0x55a37d340ac0",
        "alertable": true,
        "owner_pids": [],
        "detail": "pthread_mutex (normal)"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18901,
        "thread_name": "a",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1268",
        "context_switches": "1",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      }
    ],
    "is_cycle": true,
    "truncated": false,
    "node_count": 5
  },
  {
    "pid": 18898,
    "tid": 18902,
    "nodes": [
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18902,
        "thread_name": "b",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1264",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_MUTEX",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "0x55a37d340ac0",
        "alertable": true,
        "owner_pids": [],
        "detail": "pthread_mutex (normal)"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18901,
        "thread_name": "a",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1268",
        "context_switches": "1",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_MUTEX",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "0x55a37d340a80",
        "alertable": true,
        "owner_pids": [],
        "detail": "pthread_mutex (normal)"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18898,
        "tid": 18902,
        "thread_name": "b",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "1264",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      }
    ],
    "is_cycle": true,
    "truncated": false,
    "node_count": 5
  }
]','[
  {
    "thread": {
      "pid": 18898,
      "tid": 18901
    },
    "captured": true,
    "error": "",
    "architecture": "x86_64",
    "registers": [
      {
        "name": "rip",
        "value": "0x7f9391ea412b"
      },
      {
        "name": "rsp",
        "value": "0x7f9391e1ce08"
      },
      {
        "name": "rbp",
        "value": "0x7f9391e1ce30"
      },
      {
        "name": "rax",
        "value": "0xfffffffffffffe00"
      },
      {
        "name": "rbx",
        "value": "0x55a3ae5a4f90"
      },
      {
        "name": "rcx",
        "value": "0x7f9391ea412b"
      },
      {
        "name": "rdx",
        "value": "0x2"
      },
      {
        "name": "rsi",
        "value": "0x80"
      },
      {
        "name": "rdi",
        "value": "0x55a37d340a80"
      },
      {
        "name": "r8",
        "value": "0x0"
      },
      {
        "name": "r9",
        "value": "0x0"
      },
      {
        "name": "r10",
        "value": "0x0"
      },
      {
        "name": "r11",
        "value": "0x282"
      },
      {
        "name": "r12",
        "value": "0x7f9384000b70"
      },
      {
        "name": "r13",
        "value": "0x1"
      },
      {
        "name": "r14",
        "value": "0x1"
      },
      {
        "name": "r15",
        "value": "0x55a3ae5a4fc8"
      },
      {
        "name": "eflags",
        "value": "0x282"
      },
      {
        "name": "orig_rax",
        "value": "0xca"
      },
      {
        "name": "cs",
        "value": "0x33"
      },
      {
        "name": "ss",
        "value": "0x2b"
      },
      {
        "name": "ds",
        "value": "0x0"
      },
      {
        "name": "es",
        "value": "0x0"
      },
      {
        "name": "fs",
        "value": "0x0"
      },
      {
        "name": "gs",
        "value": "0x0"
      },
      {
        "name": "fs_base",
        "value": "0x7f9391e1d6c0"
      },
      {
        "name": "gs_base",
        "value": "0x0"
      }
    ],
    "frames": [
      {
        "pc": "0x7f9391ea412b",
        "function": "__GI___lll_lock_wait",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x2b",
        "scanned": false
      },
      {
        "pc": "0x7f9391eaa482",
        "function": "__pthread_mutex_lock@GLIBC_2.2.5",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x112",
        "scanned": false
      },
      {
        "pc": "0x55a37d32ab77",
        "function": "std::_Function_handler<void (pthread_mutex_t&), (anonymous namespace)::mutexAbba(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)::{lambda(pthread_mutex_t&)#3}>::_M_invoke(std::_Any_data const&, pthread_mutex_t&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0xc",
        "scanned": false
      },
      {
        "pc": "0x55a37d32bc21",
        "function": "std::_Function_handler<void (), (anonymous namespace)::abba<pthread_mutex_t>(pthread_mutex_t&, pthread_mutex_t&, std::function<void (pthread_mutex_t&)> const&)::{lambda()#1}>::_M_invoke(std::_Any_data const&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x4a",
        "scanned": false
      },
      {
        "pc": "0x55a37d33025f",
        "function": "std::thread::_State_impl<std::thread::_Invoker<std::tuple<(anonymous namespace)::named(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::function<void ()>, std::atomic<int>*)::{lambda()#1}> > >::_M_run()",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x113",
        "scanned": false
      },
      {
        "pc": "0x7f93920d44a3",
        "function": "",
        "module": "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
        "offset": "0x0",
        "scanned": false
      },
      {
        "pc": "0x7f9391ea71f5",
        "function": "start_thread",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x305",
        "scanned": false
      },
      {
        "pc": "0x7f9391f278ec",
        "function": "__clone3",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x2c",
        "scanned": false
      }
    ],
    "stop_time_ns": "25871257",
    "tracer_pid": 0,
    "method": "CAPTURE_METHOD_STOPPED",
    "note": ""
  },
  {
    "thread": {
      "pid": 18898,
      "tid": 18902
    },
    "captured": true,
    "error": "",
    "architecture": "x86_64",
    "registers": [
      {
        "name": "rip",
        "value": "0x7f9391ea412b"
      },
      {
        "name": "rsp",
        "value": "0x7f939161be08"
      },
      {
        "name": "rbp",
        "value": "0x7f939161be30"
      },
      {
        "name": "rax",
        "value": "0xfffffffffffffe00"
      },
      {
        "name": "rbx",
        "value": "0x55a3ae5a5150"
      },
      {
        "name": "rcx",
        "value": "0x7f9391ea412b"
      },
      {
        "name": "rdx",
        "value": "0x2"
      },
      {
        "name": "rsi",
        "value": "0x80"
      },
      {
        "name": "rdi",
        "value": "0x55a37d340ac0"
      },
      {
        "name": "r8",
        "value": "0x0"
      },
      {
        "name": "r9",
        "value": "0x0"
      },
      {
        "name": "r10",
        "value": "0x0"
      },
      {
        "name": "r11",
        "value": "0x282"
      },
      {
        "name": "r12",
        "value": "0x7f938c000b70"
      },
      {
        "name": "r13",
        "value": "0x55a37d340bb0"
      },
      {
        "name": "r14",
        "value": "0x7ffdb172bfd0"
      },
      {
        "name": "r15",
        "value": "0x55a3ae5a5188"
      },
      {
        "name": "eflags",
        "value": "0x282"
      },
      {
        "name": "orig_rax",
        "value": "0xca"
      },
      {
        "name": "cs",
        "value": "0x33"
      },
      {
        "name": "ss",
        "value": "0x2b"
      },
      {
        "name": "ds",
        "value": "0x0"
      },
      {
        "name": "es",
        "value": "0x0"
      },
      {
        "name": "fs",
        "value": "0x0"
      },
      {
        "name": "gs",
        "value": "0x0"
      },
      {
        "name": "fs_base",
        "value": "0x7f939161c6c0"
      },
      {
        "name": "gs_base",
        "value": "0x0"
      }
    ],
    "frames": [
      {
        "pc": "0x7f9391ea412b",
        "function": "__GI___lll_lock_wait",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x2b",
        "scanned": false
      },
      {
        "pc": "0x7f9391eaa482",
        "function": "__pthread_mutex_lock@GLIBC_2.2.5",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x112",
        "scanned": false
      },
      {
        "pc": "0x55a37d32ab77",
        "function": "std::_Function_handler<void (pthread_mutex_t&), (anonymous namespace)::mutexAbba(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)::{lambda(pthread_mutex_t&)#3}>::_M_invoke(std::_Any_data const&, pthread_mutex_t&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0xc",
        "scanned": false
      },
      {
        "pc": "0x55a37d32bc7b",
        "function": "std::_Function_handler<void (), (anonymous namespace)::abba<pthread_mutex_t>(pthread_mutex_t&, pthread_mutex_t&, std::function<void (pthread_mutex_t&)> const&)::{lambda()#2}>::_M_invoke(std::_Any_data const&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x4a",
        "scanned": false
      },
      {
        "pc": "0x55a37d33025f",
        "function": "std::thread::_State_impl<std::thread::_Invoker<std::tuple<(anonymous namespace)::named(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, std::function<void ()>, std::atomic<int>*)::{lambda()#1}> > >::_M_run()",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x113",
        "scanned": false
      },
      {
        "pc": "0x7f93920d44a3",
        "function": "",
        "module": "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
        "offset": "0x0",
        "scanned": false
      },
      {
        "pc": "0x7f9391ea71f5",
        "function": "start_thread",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x305",
        "scanned": false
      },
      {
        "pc": "0x7f9391f278ec",
        "function": "__clone3",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x2c",
        "scanned": false
      }
    ],
    "stop_time_ns": "7771757",
    "tracer_pid": 0,
    "method": "CAPTURE_METHOD_STOPPED",
    "note": ""
  }
]','[
  {
    "pid": 18898,
    "start_time": "1105632",
    "name": "wctmon-fixture"
  }
]');
INSERT INTO "incidents" VALUES(2,'deadlock','open',18903,1105639,'wctmon-fixture','fixtures','deadlock [18899:18899] [18903:18903]','18899:18899 18903:18903','',1795432775889004009,1795432776004683470,NULL,'','deadlock of 2 threads in wctmon-fixture (pid 18899) and wctmon-fixture (pid 18903): [18899:18899] wctmon-fixture, [18903:18903] wctmon-fixture','[
  {
    "pid": 18899,
    "tid": 18899,
    "nodes": [
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18899,
        "tid": 18899,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "110",
        "context_switches": "6",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_FILE_LOCK",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "/tmp/wctmon-fixture-abba-5tITVs (deleted) [0-EOF]",
        "alertable": true,
        "owner_pids": [
          18903
        ],
        "detail": "FLOCK write lock; waiting for write"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18903,
        "tid": 18903,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "105",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_FILE_LOCK",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "/tmp/wctmon-fixture-abba-2bFDYW (deleted) [0-EOF]",
        "alertable": true,
        "owner_pids": [
          18899
        ],
        "detail": "FLOCK write lock; waiting for write"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18899,
        "tid": 18899,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "110",
        "context_switches": "6",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      }
    ],
    "is_cycle": true,
    "truncated": false,
    "node_count": 5
  },
  {
    "pid": 18903,
    "tid": 18903,
    "nodes": [
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18903,
        "tid": 18903,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "94",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_FILE_LOCK",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "/tmp/wctmon-fixture-abba-2bFDYW (deleted) [0-EOF]",
        "alertable": true,
        "owner_pids": [
          18899
        ],
        "detail": "FLOCK write lock; waiting for write"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18899,
        "tid": 18899,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "100",
        "context_switches": "6",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      },
      {
        "object_type": "OBJECT_TYPE_FILE_LOCK",
        "status": "OBJECT_STATUS_OWNED",
        "pid": 0,
        "tid": 0,
        "thread_name": "",
        "process_name": "",
        "name": "/tmp/wctmon-fixture-abba-5tITVs (deleted) [0-EOF]",
        "alertable": true,
        "owner_pids": [
          18903
        ],
        "detail": "FLOCK write lock; waiting for write"
      },
      {
        "object_type": "OBJECT_TYPE_THREAD",
        "status": "OBJECT_STATUS_BLOCKED",
        "pid": 18903,
        "tid": 18903,
        "thread_name": "wctmon-fixture",
        "process_name": "wctmon-fixture",
        "wait_time_ms": "94",
        "context_switches": "4",
        "name": "",
        "alertable": false,
        "owner_pids": [],
        "detail": ""
      }
    ],
    "is_cycle": true,
    "truncated": false,
    "node_count": 5
  }
]','[
  {
    "thread": {
      "pid": 18899,
      "tid": 18899
    },
    "captured": true,
    "error": "",
    "architecture": "x86_64",
    "registers": [
      {
        "name": "rip",
        "value": "0x7f2916d16897"
      },
      {
        "name": "rsp",
        "value": "0x7ffde427a5a8"
      },
      {
        "name": "rbp",
        "value": "0x7ffde427a5e0"
      },
      {
        "name": "rax",
        "value": "0xfffffffffffffe00"
      },
      {
        "name": "rbx",
        "value": "0x7ffde427a640"
      },
      {
        "name": "rcx",
        "value": "0x7f2916d16897"
      },
      {
        "name": "rdx",
        "value": "0x5"
      },
      {
        "name": "rsi",
        "value": "0x2"
      },
      {
        "name": "rdi",
        "value": "0x4"
      },
      {
        "name": "r8",
        "value": "0x0"
      },
      {
        "name": "r9",
        "value": "0x7ffde427a4f7"
      },
      {
        "name": "r10",
        "value": "0x7f2916c272d8"
      },
      {
        "name": "r11",
        "value": "0x246"
      },
      {
        "name": "r12",
        "value": "0x4"
      },
      {
        "name": "r13",
        "value": "0x49d3"
      },
      {
        "name": "r14",
        "value": "0x7ffde427a6b0"
      },
      {
        "name": "r15",
        "value": "0x7f29171c3020"
      },
      {
        "name": "eflags",
        "value": "0x246"
      },
      {
        "name": "orig_rax",
        "value": "0x49"
      },
      {
        "name": "cs",
        "value": "0x33"
      },
      {
        "name": "ss",
        "value": "0x2b"
      },
      {
        "name": "ds",
        "value": "0x0"
      },
      {
        "name": "es",
        "value": "0x0"
      },
      {
        "name": "fs",
        "value": "0x0"
      },
      {
        "name": "gs",
        "value": "0x0"
      },
      {
        "name": "fs_base",
        "value": "0x7f2917075740"
      },
      {
        "name": "gs_base",
        "value": "0x0"
      }
    ],
    "frames": [
      {
        "pc": "0x7f2916d16897",
        "function": "flock",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x7",
        "scanned": false
      },
      {
        "pc": "0x55f5964cd55c",
        "function": "(anonymous namespace)::lockFile(int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x7f",
        "scanned": false
      },
      {
        "pc": "0x55f5964d7c85",
        "function": "main",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x34fa",
        "scanned": false
      },
      {
        "pc": "0x7f2916c4524a",
        "function": "__libc_start_call_main",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x7a",
        "scanned": false
      },
      {
        "pc": "0x7f2916c45305",
        "function": "__libc_start_main@@GLIBC_2.34",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x85",
        "scanned": false
      },
      {
        "pc": "0x55f5964cb5f1",
        "function": "_start",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x21",
        "scanned": false
      }
    ],
    "stop_time_ns": "2191556",
    "tracer_pid": 0,
    "method": "CAPTURE_METHOD_STOPPED",
    "note": ""
  },
  {
    "thread": {
      "pid": 18903,
      "tid": 18903
    },
    "captured": true,
    "error": "",
    "architecture": "x86_64",
    "registers": [
      {
        "name": "rip",
        "value": "0x7f2916d16897"
      },
      {
        "name": "rsp",
        "value": "0x7ffde427a5a8"
      },
      {
        "name": "rbp",
        "value": "0x7ffde427a5e0"
      },
      {
        "name": "rax",
        "value": "0xfffffffffffffe00"
      },
      {
        "name": "rbx",
        "value": "0x7ffde427a640"
      },
      {
        "name": "rcx",
        "value": "0x7f2916d16897"
      },
      {
        "name": "rdx",
        "value": "0x5"
      },
      {
        "name": "rsi",
        "value": "0x2"
      },
      {
        "name": "rdi",
        "value": "0x7"
      },
      {
        "name": "r8",
        "value": "0x0"
      },
      {
        "name": "r9",
        "value": "0x7f2917075740"
      },
      {
        "name": "r10",
        "value": "0x7f2916c374f0"
      },
      {
        "name": "r11",
        "value": "0x246"
      },
      {
        "name": "r12",
        "value": "0x7"
      },
      {
        "name": "r13",
        "value": "0x3"
      },
      {
        "name": "r14",
        "value": "0x8"
      },
      {
        "name": "r15",
        "value": "0x7f29171c3020"
      },
      {
        "name": "eflags",
        "value": "0x246"
      },
      {
        "name": "orig_rax",
        "value": "0x49"
      },
      {
        "name": "cs",
        "value": "0x33"
      },
      {
        "name": "ss",
        "value": "0x2b"
      },
      {
        "name": "ds",
        "value": "0x0"
      },
      {
        "name": "es",
        "value": "0x0"
      },
      {
        "name": "fs",
        "value": "0x0"
      },
      {
        "name": "gs",
        "value": "0x0"
      },
      {
        "name": "fs_base",
        "value": "0x7f2917075740"
      },
      {
        "name": "gs_base",
        "value": "0x0"
      }
    ],
    "frames": [
      {
        "pc": "0x7f2916d16897",
        "function": "flock",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x7",
        "scanned": false
      },
      {
        "pc": "0x55f5964cd55c",
        "function": "(anonymous namespace)::lockFile(int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x7f",
        "scanned": false
      },
      {
        "pc": "0x55f5964d7b23",
        "function": "main",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x3398",
        "scanned": false
      },
      {
        "pc": "0x7f2916c4524a",
        "function": "__libc_start_call_main",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x7a",
        "scanned": false
      },
      {
        "pc": "0x7f2916c45305",
        "function": "__libc_start_main@@GLIBC_2.34",
        "module": "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "offset": "0x85",
        "scanned": false
      },
      {
        "pc": "0x55f5964cb5f1",
        "function": "_start",
        "module": "/work/bench-base/build/default/tests/wctmon-fixture",
        "offset": "0x21",
        "scanned": false
      }
    ],
    "stop_time_ns": "1842645",
    "tracer_pid": 0,
    "method": "CAPTURE_METHOD_STOPPED",
    "note": ""
  }
]','[
  {
    "pid": 18903,
    "start_time": "1105639",
    "name": "wctmon-fixture"
  },
  {
    "pid": 18899,
    "start_time": "1105634",
    "name": "wctmon-fixture"
  }
]');
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO "schema_version" VALUES(2);
CREATE TABLE targets (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  created_at_ns INTEGER NOT NULL
);
CREATE INDEX incidents_by_state ON incidents(state, opened_at_ns);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('incidents',2);
COMMIT;
