#include "client/table.h"

#include <algorithm>

#include "wire/terminal_text.h"

namespace wctmon::client {
namespace {

constexpr std::size_t kGap = 2;
/// A cut column keeps at least this much (or its header), so that it still says something.
constexpr std::size_t kNarrowest = 8;

}  // namespace

void Table::add(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (auto& cell : cells) cell = wire::terminalSafe(cell, false);
  rows_.push_back(std::move(cells));
}

std::string Table::render(std::optional<std::size_t> width, bool headers) const {
  std::vector<std::size_t> widths;
  for (const auto& column : columns_) {
    widths.push_back(headers ? wire::displayWidth(column.header) : 0);
  }
  for (const auto& row : rows_) {
    for (std::size_t k = 0; k < row.size(); ++k)
      widths[k] = std::max(widths[k], wire::displayWidth(row[k]));
  }
  if (width) {
    auto total = [&] {
      std::size_t sum = kGap * (widths.size() - 1);
      for (const auto w : widths) sum += w;
      return sum;
    };
    // Narrow the widest column that may shrink, one column at a time, until the row fits.
    for (std::size_t excess = total() > *width ? total() - *width : 0; excess > 0; --excess) {
      std::size_t widest = widths.size();
      for (std::size_t k = 0; k < widths.size(); ++k) {
        const auto floor = std::max(kNarrowest, wire::displayWidth(columns_[k].header));
        if (columns_[k].shrinks && widths[k] > floor &&
            (widest == widths.size() || widths[k] > widths[widest])) {
          widest = k;
        }
      }
      if (widest == widths.size()) break;  // nothing left to cut: the row stays longer
      --widths[widest];
    }
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t k = 0; k < cells.size(); ++k) {
      const auto cell = wire::fitWidth(cells[k], widths[k]);
      const std::string pad(widths[k] - wire::displayWidth(cell), ' ');
      if (k > 0) text += std::string(kGap, ' ');
      text += columns_[k].right ? pad + cell : cell + pad;
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + "\n";
  };
  std::vector<std::string> header_cells;
  for (const auto& column : columns_) header_cells.push_back(column.header);
  if (headers) line(header_cells);
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace wctmon::client
