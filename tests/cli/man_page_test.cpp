#include "cli/man_page.h"

#include <gtest/gtest.h>

#include "cli/toy_app.h"

namespace wctmon::cli {
namespace {

TEST(ManPage, TextIsEscapedForRoff) {
  EXPECT_EQ(roffText("a-b \\ c"), "a\\-b \\e c");
  EXPECT_EQ(roffText("**bold** and __italic__ text"), "\\fBbold\\fR and \\fIitalic\\fR text");
  EXPECT_EQ(roffText("**unclosed"), "\\fBunclosed\\fR");
  EXPECT_EQ(roffText("cut\xe2\x80\xa6 caf\xc3\xa9"), "cut\\[u2026] caf\\[u00E9]");
  EXPECT_EQ(roffText("tab\there\nline"), "tab here line");
}

TEST(ManPage, TheTablesMakeTheSynopsisCommandsOptionsAndExamples) {
  ToyApp toy;
  ManPage page;
  page.name = "tool";
  page.summary = "does things";
  page.source = "tool 1.0";
  page.date = "2026-11-27";
  page.before = {{"DESCRIPTION", {"It **does** things.", ".dots and 'quotes' at the start"}}};
  page.after = {{"EXIT STATUS", {"0\tDone.", "2\tUsage."}}};
  page.see_also = {"other(8)", "more(1)"};
  const auto roff = manPage(toy.app, *toy.help, page);
  const auto has = [&](const std::string& text) {
    return roff.find(text) != std::string::npos ? ::testing::AssertionSuccess()
                                                : ::testing::AssertionFailure() << text << " in:\n"
                                                                                << roff;
  };
  EXPECT_EQ(roff.rfind(".TH TOOL 1 \"2026-11-27\" \"tool 1.0\" \"User Commands\"\n", 0), 0U);
  EXPECT_TRUE(has(".SH NAME\ntool \\- does things\n"));
  EXPECT_TRUE(has(".SH SYNOPSIS\n\\fBtool\\fR [\\fIoptions\\fR] \\fIcommand\\fR"));
  EXPECT_TRUE(has("\\fBtool jobs list\\fR [\\fIoptions\\fR]\n"));
  EXPECT_TRUE(has("\\fBtool completion\\fR \\fISHELL\\fR\n"));
  EXPECT_TRUE(has(".SH DESCRIPTION\nIt \\fBdoes\\fR things.\n.PP\n\\&.dots"));
  EXPECT_TRUE(has(".TP\n\\fBjobs list\\fR\nList the jobs\n.RS\n"));
  EXPECT_TRUE(has(".TP\n\\fB\\-\\-state\\fR \\fISTATE\\fR\nopen or done\n"));
  EXPECT_TRUE(has("Say more, with a \\e and a \\- and a 'quote'"));
  EXPECT_TRUE(has(".PP\nExamples:\n.TP\n\\fBtool jobs list \\-\\-state open\\fR\nthe open jobs\n"));
  EXPECT_TRUE(has(".SH OPTIONS\nBefore or after the command.\n"));
  EXPECT_TRUE(has(".TP\n\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fITEXT\\fR\ntable or json\n"));
  EXPECT_TRUE(has(".SH EXIT STATUS\n.TP\n0\nDone.\n.TP\n2\nUsage.\n"));
  EXPECT_TRUE(has(".SH EXAMPLES\n.TP\n\\fBtool jobs list\\fR\nthe jobs\n"));
  EXPECT_TRUE(has(".SH SEE ALSO\n.BR other (8),\n.BR more (1)\n"));
  EXPECT_FALSE(has("__man"));
  // The order of the sections.
  EXPECT_LT(roff.find(".SH DESCRIPTION"), roff.find(".SH COMMANDS"));
  EXPECT_LT(roff.find(".SH COMMANDS"), roff.find(".SH OPTIONS"));
  EXPECT_LT(roff.find(".SH OPTIONS"), roff.find(".SH EXIT STATUS"));
  EXPECT_LT(roff.find(".SH EXIT STATUS"), roff.find(".SH EXAMPLES"));
}

}  // namespace
}  // namespace wctmon::cli
