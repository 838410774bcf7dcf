#pragma once

#include <cstddef>
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

  /// The table; unless `wide`, the columns that shrink are cut so that no row is longer than
  /// `width` columns.
  [[nodiscard]] std::string render(bool wide, std::size_t width = 80) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace wctmon::client
