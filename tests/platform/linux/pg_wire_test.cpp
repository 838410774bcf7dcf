// The PostgreSQL protocol messages, byte for byte as the protocol's documentation lays them out,
// and a server's answers arriving in pieces.
#include "platform/linux/pg_wire.h"

#include <gtest/gtest.h>

namespace wctmon::linux_platform {
namespace {

using namespace std::string_literals;

/// A server message: type, length (itself included), body.
std::string serverMessage(char type, const std::string& body) {
  const auto n = static_cast<std::uint32_t>(body.size() + 4);
  std::string out(1, type);
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  return out + body;
}

TEST(PgWire, TheStartupMessageHasNoTypeAndEndsItsParametersWithAnEmptyName) {
  EXPECT_EQ(pgStartupMessage({{"user", "pg"}, {"database", "postgres"}}),
            "\0\0\0\x23\0\x03\0\0user\0pg\0database\0postgres\0\0"s);
}

TEST(PgWire, AQueryAndTheEndOfASessionAreTypedMessages) {
  EXPECT_EQ(pgQueryMessage("select 1"), "Q\0\0\0\x0dselect 1\0"s);
  EXPECT_EQ(pgTerminateMessage(), "X\0\0\0\x04"s);
}

TEST(PgWire, MessagesAreTakenWholeHoweverTheyArrive) {
  const auto stream = serverMessage('R', "\0\0\0\0"s) + serverMessage('Z', "I");
  PgMessageReader reader;
  std::vector<PgMessage> got;
  for (const char c : stream) {
    reader.feed(std::string(1, c));
    for (;;) {
      auto m = reader.next();
      ASSERT_TRUE(m.ok());
      if (!*m) break;
      got.push_back(std::move(**m));
    }
  }
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].type, 'R');
  EXPECT_EQ(got[0].body, "\0\0\0\0"s);
  EXPECT_EQ(got[1].type, 'Z');
  EXPECT_EQ(got[1].body, "I");
}

TEST(PgWire, ALengthNoServerSendsIsAnError) {
  PgMessageReader reader;
  reader.feed("D\xff\xff\xff\xff"s);
  EXPECT_FALSE(reader.next().ok());
  PgMessageReader short_length;
  short_length.feed("D\0\0\0\x02"s);
  EXPECT_FALSE(short_length.next().ok());
}

TEST(PgWire, ARowHasTextColumnsAndNulls) {
  const auto row = parsePgDataRow(
      "\0\x02\0\0\0\x03"
      "abc\xff\xff\xff\xff"s);
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->size(), 2U);
  EXPECT_EQ((*row)[0], "abc");
  EXPECT_EQ((*row)[1], std::nullopt);
}

TEST(PgWire, ARowThatEndsEarlyOrGoesOnIsMalformed) {
  EXPECT_FALSE(parsePgDataRow("\0\x01\0\0\0\x05"
                              "ab"s)
                   .ok());
  EXPECT_FALSE(parsePgDataRow("\0\x01\0\0\0\x01"
                              "ab"s)
                   .ok());
  EXPECT_FALSE(parsePgDataRow("\0"s).ok());
}

TEST(PgWire, AnErrorSaysItsSeverityMessageAndCode) {
  const auto body = "SFATAL\0VFATAL\0C3D000\0Mdatabase \"x\" does not exist\0\0"s;
  EXPECT_EQ(pgErrorText(body), "FATAL: database \"x\" does not exist");
  EXPECT_EQ(pgErrorCode(body), "3D000");
  EXPECT_EQ(pgErrorText("Mno severity\0\0"s), "no severity");
}

}  // namespace
}  // namespace wctmon::linux_platform
