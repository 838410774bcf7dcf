#include "client/jsonpath.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>

namespace wctmon::client {
namespace {

using json = nlohmann::ordered_json;

struct Step;
using Path = std::vector<Step>;

/// [?(@.field OP literal)], or [?(@.field)] when `op` is empty.
struct Filter {
  std::vector<Step> path;
  std::string op;
  json literal;
};

struct Step {
  enum class Kind { kField, kWildcard, kRecursive, kIndices, kSlice, kFilter };
  Kind kind = Kind::kField;
  /// kField, kRecursive (empty: every value below).
  std::string name{};
  /// kIndices.
  std::vector<std::int64_t> indices{};
  /// kSlice: [start:end].
  std::optional<std::int64_t> start{};
  std::optional<std::int64_t> end{};
  /// kFilter.
  std::shared_ptr<const Filter> filter{};
};

/// A reader of one expression, with errors naming the position in the whole template.
class Reader {
 public:
  Reader(std::string_view text, std::size_t offset) : text_(text), offset_(offset) {}

  [[nodiscard]] bool done() const { return at_ >= text_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return at_ + ahead < text_.size() ? text_[at_ + ahead] : '\0';
  }
  char next() { return done() ? '\0' : text_[at_++]; }
  void skipSpaces() {
    while (!done() && std::isspace(static_cast<unsigned char>(peek())) != 0) ++at_;
  }
  bool accept(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  [[nodiscard]] std::string error(const std::string& what) const {
    return what + " at column " + std::to_string(offset_ + at_ + 1);
  }

  static bool wordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  }
  std::string word() {
    std::string out;
    while (!done() && wordChar(peek())) out += next();
    return out;
  }

  /// A quoted string ('...' or "..."), escapes \n \t \r \\ \" \' read.
  std::optional<std::string> quoted() {
    const char quote = next();
    std::string out;
    while (!done()) {
      char c = next();
      if (c == quote) return out;
      if (c == '\\') {
        c = next();
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
      } else {
        out += c;
      }
    }
    return std::nullopt;
  }

  std::optional<std::int64_t> number() {
    skipSpaces();
    std::size_t end = at_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end])) != 0) ++end;
    std::int64_t value = 0;
    const auto [stop, ec] = std::from_chars(text_.data() + at_, text_.data() + end, value);
    if (ec != std::errc() || stop == text_.data() + at_) return std::nullopt;
    at_ = end;
    skipSpaces();
    return value;
  }

  /// Steps until the end, or until a character that ends a path inside a filter.
  std::variant<Path, std::string> path(bool in_filter) {
    Path out;
    if (peek() == '$' || peek() == '@') next();
    while (!done()) {
      if (in_filter && (std::isspace(static_cast<unsigned char>(peek())) != 0 ||
                        std::string_view("=!<>)").find(peek()) != std::string_view::npos)) {
        break;
      }
      if (accept("..")) {
        Step step{.kind = Step::Kind::kRecursive};
        if (!accept("*")) {
          step.name = word();
          if (step.name.empty()) return error("expected a field name after '..'");
        }
        out.push_back(std::move(step));
      } else if (accept(".")) {
        if (accept("*")) {
          out.push_back({.kind = Step::Kind::kWildcard});
        } else if (wordChar(peek())) {
          out.push_back({.kind = Step::Kind::kField, .name = word()});
        } else if (!done() && peek() != '.' && peek() != '[') {
          return error(std::string("unexpected '") + peek() + "'");
        }
      } else if (accept("[")) {
        auto step = bracket();
        if (auto* why = std::get_if<std::string>(&step)) return *why;
        out.push_back(std::get<Step>(std::move(step)));
      } else {
        return error(std::string("unexpected '") + peek() + "'");
      }
    }
    return out;
  }

 private:
  /// What follows '[' up to its ']'.
  std::variant<Step, std::string> bracket() {
    skipSpaces();
    Step step;
    if (accept("*")) {
      step.kind = Step::Kind::kWildcard;
    } else if (peek() == '\'' || peek() == '"') {
      const auto name = quoted();
      if (!name) return error("unterminated string");
      step.name = *name;
    } else if (accept("?(")) {
      auto filter = std::make_shared<Filter>();
      skipSpaces();
      if (peek() != '@') return error("a filter starts with @");
      auto path = this->path(true);
      if (auto* why = std::get_if<std::string>(&path)) return *why;
      filter->path = std::get<Path>(std::move(path));
      skipSpaces();
      for (const std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (accept(op)) {
          filter->op = op;
          break;
        }
      }
      if (!filter->op.empty()) {
        skipSpaces();
        if (peek() == '\'' || peek() == '"') {
          const auto text = quoted();
          if (!text) return error("unterminated string");
          filter->literal = *text;
        } else if (accept("true")) {
          filter->literal = true;
        } else if (accept("false")) {
          filter->literal = false;
        } else if (accept("null")) {
          filter->literal = nullptr;
        } else if (const auto n = number()) {
          filter->literal = *n;
        } else {
          return error("expected a number, a string, true, false or null");
        }
      }
      skipSpaces();
      if (!accept(")")) return error("expected ')'");
      step.kind = Step::Kind::kFilter;
      step.filter = std::move(filter);
    } else {
      // [n], [n,m], [a:b], [:b], [a:].
      const auto first = peek() == ':' ? std::nullopt : number();
      if (accept(":")) {
        step.kind = Step::Kind::kSlice;
        step.start = first;
        step.end = peek() == ']' ? std::nullopt : number();
        if (peek() != ']' && !step.end) return error("expected a number");
      } else {
        if (!first) return error("expected *, a number, a 'name' or ?(...)");
        step.kind = Step::Kind::kIndices;
        step.indices.push_back(*first);
        while (accept(",")) {
          const auto more = number();
          if (!more) return error("expected a number");
          step.indices.push_back(*more);
        }
      }
    }
    skipSpaces();
    if (!accept("]")) return error("expected ']'");
    return step;
  }

  std::string_view text_;
  std::size_t offset_;
  std::size_t at_ = 0;
};

std::vector<const json*> evaluate(const Path& path, const json& start);

void descendants(const json& value, const std::string& name, std::vector<const json*>& out) {
  if (!value.is_structured()) return;
  for (const auto& [key, item] : value.items()) {
    if (name.empty() || (value.is_object() && key == name)) out.push_back(&item);
    descendants(item, name, out);
  }
}

/// `value` as a number for a comparison: numbers, and strings that hold one (the int64 ids).
std::optional<double> numberOf(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string()) return std::nullopt;
  const auto& text = value.get_ref<const std::string&>();
  double out = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return out;
}

bool matches(const Filter& filter, const json& item) {
  const auto found = evaluate(filter.path, item);
  if (filter.op.empty()) return !found.empty();
  for (const json* value : found) {
    int order = 0;  // value compared to the literal: -1, 0, 1
    const auto a = numberOf(*value);
    const auto b = numberOf(filter.literal);
    if (value->is_string() && filter.literal.is_string()) {
      const auto& x = value->get_ref<const std::string&>();
      const auto& y = filter.literal.get_ref<const std::string&>();
      order = x < y ? -1 : x > y ? 1 : 0;
    } else if (a && b) {
      order = *a < *b ? -1 : *a > *b ? 1 : 0;
    } else {
      const bool equal = *value == filter.literal;
      if ((filter.op == "==" && equal) || (filter.op == "!=" && !equal)) return true;
      continue;
    }
    const std::string& op = filter.op;
    if ((op == "==" && order == 0) || (op == "!=" && order != 0) || (op == "<" && order < 0) ||
        (op == "<=" && order <= 0) || (op == ">" && order > 0) || (op == ">=" && order >= 0)) {
      return true;
    }
  }
  return false;
}

std::vector<const json*> evaluate(const Path& path, const json& start) {
  std::vector<const json*> current = {&start};
  for (const Step& step : path) {
    std::vector<const json*> next;
    for (const json* value : current) {
      switch (step.kind) {
        case Step::Kind::kField:
          if (value->is_object()) {
            if (const auto found = value->find(step.name); found != value->end()) {
              next.push_back(&*found);
            }
          }
          break;
        case Step::Kind::kWildcard:
          if (value->is_structured()) {
            for (const auto& item : *value) next.push_back(&item);
          }
          break;
        case Step::Kind::kRecursive:
          descendants(*value, step.name, next);
          break;
        case Step::Kind::kIndices:
          if (value->is_array()) {
            const auto size = static_cast<std::int64_t>(value->size());
            for (auto index : step.indices) {
              if (index < 0) index += size;
              if (index >= 0 && index < size) next.push_back(&(*value)[index]);
            }
          }
          break;
        case Step::Kind::kSlice:
          if (value->is_array()) {
            const auto size = static_cast<std::int64_t>(value->size());
            const auto clamp = [&](std::int64_t i) {
              return std::min(std::max(i < 0 ? i + size : i, std::int64_t{0}), size);
            };
            const auto from = clamp(step.start.value_or(0));
            const auto to = clamp(step.end.value_or(size));
            for (auto i = from; i < to; ++i) next.push_back(&(*value)[i]);
          }
          break;
        case Step::Kind::kFilter:
          if (value->is_structured()) {
            for (const auto& item : *value) {
              if (matches(*step.filter, item)) next.push_back(&item);
            }
          }
          break;
      }
    }
    current = std::move(next);
  }
  return current;
}

}  // namespace

struct JsonPath::Node {
  enum class Kind { kText, kPath, kRange };
  Kind kind = Kind::kText;
  std::string text;
  Path path;
  /// Whether the path starts at the document ($) rather than the element of the range (@, .).
  bool from_root = false;
  std::vector<std::shared_ptr<const Node>> body;
};

std::variant<JsonPath, std::string> JsonPath::parse(std::string_view text) {
  // No brace: the whole of it is one expression (".incidents[*].id").
  std::string wrapped;
  std::size_t shift = 0;
  if (text.find('{') == std::string_view::npos) {
    wrapped = "{" + std::string(text) + "}";
    text = wrapped;
    shift = 1;
  }
  // The nodes being filled: the template's, then the body of each range open.
  std::vector<std::vector<std::shared_ptr<const Node>>> open(1);
  std::vector<std::shared_ptr<Node>> ranges;
  for (std::size_t at = 0; at < text.size();) {
    if (text[at] != '{') {
      const auto brace = std::min(text.find('{', at), text.size());
      auto node = std::make_shared<Node>();
      node->text = std::string(text.substr(at, brace - at));
      open.back().push_back(std::move(node));
      at = brace;
      continue;
    }
    // The action ends at the first '}' outside quotes.
    std::size_t end = at + 1;
    for (char quote = 0; end < text.size() && (quote != 0 || text[end] != '}'); ++end) {
      if (quote != 0 && text[end] == '\\') {
        ++end;
      } else if (text[end] == '"' || text[end] == '\'') {
        quote = quote == 0 ? text[end] : quote == text[end] ? 0 : quote;
      }
    }
    const auto column = [&](std::size_t i) { return std::to_string(i - shift + 1); };
    if (end >= text.size()) return "no '}' closes the '{' at column " + column(at);
    std::string_view action = text.substr(at + 1, end - at - 1);
    std::size_t offset = at + 1 - shift;
    while (!action.empty() && std::isspace(static_cast<unsigned char>(action.front())) != 0) {
      action.remove_prefix(1);
      ++offset;
    }
    while (!action.empty() && std::isspace(static_cast<unsigned char>(action.back())) != 0) {
      action.remove_suffix(1);
    }
    at = end + 1;
    if (action == "end") {
      if (ranges.empty()) return "{end} without a {range} at column " + column(end);
      ranges.back()->body = std::move(open.back());
      open.pop_back();
      ranges.pop_back();
      continue;
    }
    auto node = std::make_shared<Node>();
    Reader reader(action, offset);
    if (action.front() == '"' || action.front() == '\'') {
      const auto literal = reader.quoted();
      if (!literal || !reader.done()) return reader.error("a string stands alone in its braces");
      node->text = *literal;
      open.back().push_back(std::move(node));
      continue;
    }
    const bool range = reader.accept("range ");
    reader.skipSpaces();
    node->from_root = reader.peek() == '$';
    auto path = reader.path(false);
    if (auto* why = std::get_if<std::string>(&path)) return *why;
    node->path = std::get<Path>(std::move(path));
    node->kind = range ? Node::Kind::kRange : Node::Kind::kPath;
    open.back().push_back(node);
    if (range) {
      ranges.push_back(node);
      open.emplace_back();
    }
  }
  if (!ranges.empty()) return std::string("a {range} without its {end}");
  return JsonPath(std::move(open.front()));
}

namespace {

using ValueText = std::function<std::string(const std::string&)>;

void renderNodes(const std::vector<std::shared_ptr<const JsonPath::Node>>& nodes, const json& root,
                 const json& current, const ValueText& value_text, std::string& out);

}  // namespace

std::string JsonPath::render(const json& document, const ValueText& value_text) const {
  std::string out;
  renderNodes(nodes_, document, document, value_text, out);
  return out;
}

namespace {

void renderNodes(const std::vector<std::shared_ptr<const JsonPath::Node>>& nodes, const json& root,
                 const json& current, const ValueText& value_text, std::string& out) {
  for (const auto& node : nodes) {
    if (node->kind == JsonPath::Node::Kind::kText) {
      out += node->text;
      continue;
    }
    const auto results = evaluate(node->path, node->from_root ? root : current);
    if (node->kind == JsonPath::Node::Kind::kRange) {
      for (const json* item : results) renderNodes(node->body, root, *item, value_text, out);
      continue;
    }
    bool first = true;
    for (const json* value : results) {
      if (!first) out += ' ';
      first = false;
      auto text = value->is_string() ? value->get<std::string>()
                                     : value->dump(-1, ' ', false, json::error_handler_t::replace);
      out += value_text ? value_text(text) : text;
    }
  }
}

}  // namespace

}  // namespace wctmon::client
