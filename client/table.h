#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace wctmon::client {

/// Rows under a header, columns two spaces apart, every cell terminal-safe and on one line.
class Table {
 public:
  struct Column {
    std::string header;
    /// May be cut (ending in "…") so that a row fits the width: names, summaries.
    bool shrinks = false;
    /// Numbers read best aligned to the right.
    bool right = false;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  /// Adds a row, one cell per column; control characters in cells come out visible.
  void add(std::vector<std::string> cells);

  /// The table, with its header line unless `headers` is false. With a `width` (a terminal's),
  /// the columns that shrink are cut so that no row is longer; without one nothing is cut.
  [[nodiscard]] std::string render(std::optional<std::size_t> width, bool headers = true) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace wctmon::client
