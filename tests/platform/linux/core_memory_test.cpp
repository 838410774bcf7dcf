// A core's memory: its segments, and the mapped files for what the writer left out.
#include "platform/linux/core_memory.h"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <string>

#include "support/temp_dir.h"

namespace wctmon::linux_platform {
namespace {

constexpr std::uint64_t kBase = 0x10000;

class CoreMemoryTest : public ::testing::Test {
 protected:
  CoreMemoryTest() : dir_("core-memory") {
    // The core: 4 KiB of 'c' for the first half of a mapping of 8 KiB; the rest left out.
    std::ofstream(dir_ / "core", std::ios::binary) << std::string(0x1000, 'c');
    // The file mapped there: 'f' throughout, "path\0" at its offset 0x1800.
    std::string file(0x2000, 'f');
    file.replace(0x1800, 5, std::string("path\0", 5));
    std::ofstream(dir_ / "file", std::ios::binary) << file;
    core_.file_size = 0x1000;
    core_.loads.push_back(wire::ElfLoad{kBase, 0x2000, 0, 0x1000, 4});
    // A second segment with nothing in the core and no file: unknown memory.
    core_.loads.push_back(wire::ElfLoad{kBase + 0x4000, 0x1000, 0x1000, 0, 6});
  }
  Result<CoreMemory> open(std::vector<CoreFileMapping> files) {
    return CoreMemory::open(dir_ / "core", core_, std::move(files));
  }
  std::vector<CoreFileMapping> mapped() const {
    return {{kBase, kBase + 0x2000, 0, (dir_ / "file").string()}};
  }

  testing::TempDir dir_;
  wire::ElfCore core_;
};

std::string text(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST_F(CoreMemoryTest, MemoryTheCoreHoldsIsReadFromItAndTheRestFromTheMappedFile) {
  auto memory = open(mapped());
  ASSERT_TRUE(memory) << memory.error().message;
  std::array<std::byte, 8> out{};
  ASSERT_EQ(memory->read(kBase + 8, out), MemoryAccess::kOk);
  EXPECT_EQ(text(out), "cccccccc");
  ASSERT_EQ(memory->read(kBase + 0x1100, out), MemoryAccess::kOk);
  EXPECT_EQ(text(out), "ffffffff");
  // Across the edge: half from the core, half from the file.
  ASSERT_EQ(memory->read(kBase + 0x1000 - 4, out), MemoryAccess::kOk);
  EXPECT_EQ(text(out), "ccccffff");
  EXPECT_EQ(memory->readString(kBase + 0x1800), "path");
}

TEST_F(CoreMemoryTest, MemoryNeitherTheCoreNorAFileHoldsIsAFault) {
  auto memory = open({});
  ASSERT_TRUE(memory) << memory.error().message;
  std::array<std::byte, 8> out{};
  EXPECT_EQ(memory->read(kBase + 0x1100, out), MemoryAccess::kFault);
  EXPECT_EQ(memory->read(kBase + 0x4000, out), MemoryAccess::kFault);
  EXPECT_EQ(memory->read(0x100, out), MemoryAccess::kFault);
  // What can be read up to the gap.
  std::array<std::byte, 16> wide{};
  EXPECT_EQ(memory->readAvailable(kBase + 0x1000 - 4, wide), 4U);
  EXPECT_FALSE(memory->readString(kBase + 0x1000 - 4));  // no end before the gap
}

TEST_F(CoreMemoryTest, AFileThatIsGoneReadsAsMemoryLeftOut) {
  auto files = mapped();
  files[0].path = (dir_ / "gone").string();
  auto memory = open(files);
  ASSERT_TRUE(memory);
  std::array<std::byte, 8> out{};
  EXPECT_EQ(memory->read(kBase + 0x1100, out), MemoryAccess::kFault);
}

TEST_F(CoreMemoryTest, ACoreWhoseSegmentsGoPastItsEndIsCutShort) {
  core_.loads.push_back(wire::ElfLoad{kBase + 0x8000, 0x1000, 0x1000, 0x1000, 6});
  auto memory = open({});
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code, ErrorCode::kDamaged);
  EXPECT_NE(memory.error().message.find("cut short"), std::string::npos) << memory.error().message;
}

}  // namespace
}  // namespace wctmon::linux_platform
