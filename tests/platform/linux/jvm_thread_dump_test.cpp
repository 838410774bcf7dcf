#include "platform/linux/jvm_thread_dump.h"

#include <gtest/gtest.h>

#include "platform/linux/jvm_attach.h"

namespace wctmon::linux_platform {
namespace {

// From `jstack -l` on OpenJDK 17.0.15 (Debian): a synchronized ABBA, a ReentrantLock ABBA and a
// thread in Object.wait, with the deadlock report HotSpot appends.
constexpr std::string_view kDump = R"(2026-11-27 00:51:58
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing):

"mon-1" #12 prio=5 os_prio=0 cpu=0.42ms elapsed=2.25s tid=0x00007f3a10120ae0 nid=0x5347 waiting for monitor entry  [0x00007f39e89fd000]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at Abba.lambda$main$0(Abba.java:6)
	- waiting to lock <0x000000069ec19480> (a java.lang.Object)
	- locked <0x000000069ec19470> (a java.lang.Object)
	at Abba$$Lambda$1/0x00007f3994000a08.run(Unknown Source)
	at java.lang.Thread.run(java.base@17.0.15/Thread.java:840)

   Locked ownable synchronizers:
	- None

"mon-2" #13 prio=5 os_prio=0 cpu=0.19ms elapsed=2.25s tid=0x00007f3a10121c10 nid=0x5348 waiting for monitor entry  [0x00007f39e88fd000]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at Abba.lambda$main$1(Abba.java:7)
	- waiting to lock <0x000000069ec19470> (a java.lang.Object)
	- locked <0x000000069ec19480> (a java.lang.Object)
	at java.lang.Thread.run(java.base@17.0.15/Thread.java:840)

   Locked ownable synchronizers:
	- None

"juc-1" #14 prio=5 os_prio=0 cpu=0.54ms elapsed=2.25s tid=0x00007f3a10122e20 nid=0x5349 waiting on condition  [0x00007f39e87fd000]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x000000069ec19618> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:211)
	at Abba.lambda$main$2(Abba.java:8)

   Locked ownable synchronizers:
	- <0x000000069ec195e8> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

"juc-2" #15 prio=5 os_prio=0 cpu=0.17ms elapsed=2.25s tid=0x00007f3a10123ef0 nid=0x534a waiting on condition  [0x00007f39e86fd000]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x000000069ec195e8> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at Abba.lambda$main$3(Abba.java:9)

   Locked ownable synchronizers:
	- <0x000000069ec19618> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

"waiter "quoted" #16" #16 prio=5 os_prio=0 cpu=0.18ms elapsed=2.25s tid=0x00007f3a10125f00 nid=0x534b in Object.wait()  [0x00007f39e85fd000]
   java.lang.Thread.State: WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.15/Native Method)
	- waiting on <0x000000069ec2f9f8> (a java.lang.Object)
	at Abba.lambda$main$4(Abba.java:11)
	- locked <0x000000069ec2f9f8> (a java.lang.Object)

   Locked ownable synchronizers:
	- None

"VM Thread" os_prio=0 cpu=0.92ms elapsed=2.28s tid=0x00007f3a100f3a20 nid=0x533b runnable  

JNI global refs: 4, weak refs: 0


Found one Java-level deadlock:
=============================
"mon-1":
  waiting to lock monitor 0x00007f3974056420 (object 0x000000069ec19480, a java.lang.Object),
  which is held by "mon-2"
)";

TEST(JvmThreadDump, ReadsThreadsTheirWaitsAndWhatTheyHold) {
  const auto dump = parseJavaThreadDump(kDump);
  EXPECT_EQ(dump.vm, "OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing)");
  ASSERT_EQ(dump.threads.size(), 6U);  // the deadlock report after them is not read again

  const auto& mon1 = dump.threads[0];
  EXPECT_EQ(mon1.name, "mon-1");
  EXPECT_EQ(mon1.tid, 0x5347);
  EXPECT_EQ(mon1.state, "BLOCKED (on object monitor)");
  EXPECT_EQ(mon1.wait, JavaWaitKind::kMonitorEnter);
  ASSERT_TRUE(mon1.waits_on);
  EXPECT_EQ(mon1.waits_on->address, 0x69ec19480U);
  EXPECT_EQ(mon1.waits_on->class_name, "java.lang.Object");
  ASSERT_EQ(mon1.monitors.size(), 1U);
  EXPECT_EQ(mon1.monitors[0].address, 0x69ec19470U);
  ASSERT_EQ(mon1.frames.size(), 3U);
  EXPECT_EQ(mon1.frames[0].function, "Abba.lambda$main$0");
  EXPECT_EQ(mon1.frames[0].file, "Abba.java");
  EXPECT_EQ(mon1.frames[0].line, 6U);
  EXPECT_EQ(mon1.frames[1].file, "");  // Unknown Source
  EXPECT_EQ(mon1.frames[2].module, "java.base@17.0.15");
  EXPECT_EQ(mon1.frames[2].file, "Thread.java");
  EXPECT_EQ(mon1.frames[2].line, 840U);

  const auto& juc1 = dump.threads[2];
  EXPECT_EQ(juc1.wait, JavaWaitKind::kPark);
  ASSERT_TRUE(juc1.waits_on);
  EXPECT_EQ(juc1.waits_on->class_name, "java.util.concurrent.locks.ReentrantLock$NonfairSync");
  ASSERT_EQ(juc1.synchronizers.size(), 1U);
  EXPECT_EQ(juc1.synchronizers[0].address, 0x69ec195e8U);
  EXPECT_EQ(juc1.frames[0].function, "jdk.internal.misc.Unsafe.park");
  EXPECT_EQ(juc1.frames[0].file, "");  // Native Method

  EXPECT_EQ(holderOf(dump, 0x69ec19480U), &dump.threads[1]);
  EXPECT_EQ(holderOf(dump, 0x69ec19618U), &dump.threads[3]);
  EXPECT_EQ(holderOf(dump, 0x1234U), nullptr);
}

TEST(JvmThreadDump, AMonitorInObjectWaitIsReleasedAndANameMayHoldQuotes) {
  const auto dump = parseJavaThreadDump(kDump);
  const auto& waiter = dump.threads[4];
  EXPECT_EQ(waiter.name, "waiter \"quoted\" #16");
  EXPECT_EQ(waiter.tid, 0x534b);
  EXPECT_EQ(waiter.wait, JavaWaitKind::kObjectWait);
  EXPECT_TRUE(waiter.monitors.empty());
  EXPECT_EQ(holderOf(dump, 0x69ec2f9f8U), nullptr);

  const auto& vm = dump.threads[5];
  EXPECT_EQ(vm.name, "VM Thread");
  EXPECT_EQ(vm.tid, 0x533b);
  EXPECT_EQ(vm.wait, JavaWaitKind::kNone);
}

TEST(JvmThreadDump, GarbageGivesNoThreads) {
  EXPECT_TRUE(parseJavaThreadDump("").threads.empty());
  EXPECT_TRUE(parseJavaThreadDump("\"unterminated\n\t- locked <zz>\n").threads.empty());
  const auto dump = parseJavaThreadDump("\"t\" nid=0xzz\n\t- waiting to lock <0x>\n\tat (\n");
  ASSERT_EQ(dump.threads.size(), 1U);
  EXPECT_EQ(dump.threads[0].tid, 0);
  EXPECT_FALSE(dump.threads[0].waits_on);
}

TEST(JvmAttach, DisableAttachMechanismRefusesAndTheLastFlagWins) {
  using namespace std::string_literals;
  EXPECT_EQ(attachRefusal("java\0-cp\0.\0Main\0"s), "");
  EXPECT_NE(attachRefusal("java\0-XX:+DisableAttachMechanism\0Main\0"s), "");
  EXPECT_EQ(attachRefusal("java\0-XX:+DisableAttachMechanism\0-XX:-DisableAttachMechanism\0"s), "");
  // From JAVA_TOOL_OPTIONS, space-separated.
  EXPECT_NE(attachRefusal("java Main -Xmx1g -XX:+DisableAttachMechanism"), "");
}

}  // namespace
}  // namespace wctmon::linux_platform
