// A row of the incident store as the service and `wctmon incidents` read it back. Any column may
// hold what a damaged or hand-edited file holds: text where a number was, a number where text
// was, a detail that is no wctmon.v1.Incident, JSON of an older schema, bytes that are not UTF-8.
// Reading reports such a row; it never crashes and never shows one half read.
#include <sqlite3.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_input.h"
#include "store/incident_store.h"
#include "support/temp_dir.h"

namespace wctmon {
namespace {

/// One store for the whole run: a row is replaced at each input.
struct Fixture {
  testing::TempDir dir{"fuzz-store"};
  std::unique_ptr<IncidentStore> store;
  sqlite3* raw = nullptr;

  Fixture() {
    auto opened = IncidentStore::open(dir / "incidents.db");
    if (!opened) fuzz::fail("the store does not open", __FILE__, __LINE__);
    store = std::move(*opened);
    if (sqlite3_open((dir / "incidents.db").c_str(), &raw) != SQLITE_OK) {
      fuzz::fail("the store does not open beside the service", __FILE__, __LINE__);
    }
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

/// A value of any of SQLite's types for column `i`.
void bindAny(sqlite3_stmt* stmt, int i, fuzz::FuzzInput& in) {
  switch (in.below(5)) {
    case 0:
      sqlite3_bind_int64(stmt, i, in.take<std::int64_t>());
      break;
    case 1: {
      const auto text = in.text(64);
      sqlite3_bind_text(stmt, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
      break;
    }
    case 2: {
      const auto bytes = in.bytes(64);
      sqlite3_bind_blob(stmt, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
      break;
    }
    case 3:
      sqlite3_bind_double(stmt, i, in.take<double>());
      break;
    default:
      sqlite3_bind_null(stmt, i);
  }
}

}  // namespace
}  // namespace wctmon

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wctmon;
  auto& f = fixture();
  fuzz::FuzzInput in(data, size);
  sqlite3_exec(f.raw, "DELETE FROM incidents", nullptr, nullptr, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(f.raw,
                     "INSERT INTO incidents (id, kind, state, pid, process_start_time, "
                     "process_name, target, signature, threads, spurs, opened_at_ns, "
                     "updated_at_ns, resolved_at_ns, resolution, summary, detail) VALUES "
                     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                     -1, &stmt, nullptr);
  const std::int64_t id = 1 + static_cast<std::int64_t>(in.below(1000));
  sqlite3_bind_int64(stmt, 1, id);
  sqlite3_bind_text(stmt, 2, in.flag() ? "hang" : "deadlock", -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, in.flag() ? "resolved" : "open", -1, SQLITE_STATIC);
  for (int column = 4; column <= 15; ++column) bindAny(stmt, column, in);
  // The detail: the binary message the service writes, or the JSON an older store kept.
  const bool as_json = in.flag();
  const auto detail = in.rest();
  if (as_json) {
    sqlite3_bind_text(stmt, 16, reinterpret_cast<const char*>(detail.data()),
                      static_cast<int>(detail.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_blob(stmt, 16, detail.data(), static_cast<int>(detail.size()), SQLITE_TRANSIENT);
  }
  const int stored = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  // NOT NULL and the CHECKs of the schema keep some rows out, as they do for any writer.
  if (stored != SQLITE_DONE) return 0;

  const auto got = f.store->get(id);
  const auto listed = f.store->list(IncidentQuery{});
  WCTMON_FUZZ_CHECK(static_cast<bool>(listed));
  if (got && *got) {
    // A row read is listed; one that is not is named in the listing's warning.
    WCTMON_FUZZ_CHECK(listed->incidents.size() == 1 && listed->incidents[0].id == id);
    WCTMON_FUZZ_CHECK(!(*got)->processes.empty());
  } else {
    WCTMON_FUZZ_CHECK(!got);
    WCTMON_FUZZ_CHECK(listed->incidents.empty() && !listed->warning.empty());
  }
  return 0;
}
