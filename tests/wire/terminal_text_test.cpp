// Text from monitored processes made inert for terminals: what wctctl prints and wctmond logs.
#include "wire/terminal_text.h"

#include <gtest/gtest.h>

namespace wctmon::wire {
namespace {

TEST(TerminalText, ControlsBidiAndIllFormedBytesBecomeVisibleAndTheRestStays) {
  EXPECT_EQ(terminalSafe("plain text"), "plain text");
  EXPECT_EQ(terminalSafe("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // é ✓
  EXPECT_EQ(terminalSafe("a\x1b]0;pwn\x07"), "a\\x1b]0;pwn\\x07");
  EXPECT_EQ(terminalSafe("\xc2\x9b"
                         "2J"),
            "\\u009b2J");                                      // C1 CSI
  EXPECT_EQ(terminalSafe("x\xe2\x80\xaey"), "x\\u202ey");      // right-to-left override
  EXPECT_EQ(terminalSafe("\xff\xc0\xaf"), "\\xff\\xc0\\xaf");  // ill-formed, byte by byte
  EXPECT_EQ(terminalSafe("one\ntwo"), "one\ntwo");
  EXPECT_EQ(terminalSafe("one\ntwo", false), "one\\x0atwo");
  EXPECT_EQ(terminalSafe("del\x7f"), "del\\x7f");
}

TEST(TerminalText, WidthsCountCharactersAndCutsEndInAnEllipsis) {
  EXPECT_EQ(displayWidth("caf\xc3\xa9"), 4U);
  EXPECT_EQ(fitWidth("abcdef", 6), "abcdef");
  EXPECT_EQ(fitWidth("abcdefg", 6), "abcde\xe2\x80\xa6");
  EXPECT_EQ(fitWidth("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xe2\x80\xa6");
  EXPECT_EQ(fitWidth("abc", 0), "");
}

}  // namespace
}  // namespace wctmon::wire
