#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace wctmon {

/// Immutable text shared between copies. Waits are copied at every sample of every watched
/// thread; their descriptions are long and need not be copied with them.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT(google-explicit-constructor): used as a string
      : text_(text.empty() ? nullptr : std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT

  SharedText& operator+=(std::string_view more) {
    text_ = std::make_shared<const std::string>(str() + std::string(more));
    return *this;
  }

  [[nodiscard]] const std::string& str() const {
    static const std::string kEmpty;
    return text_ ? *text_ : kEmpty;
  }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool empty() const { return !text_ || text_->empty(); }

  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.text_ == b.text_ || a.str() == b.str();
  }

 private:
  std::shared_ptr<const std::string> text_;
};

/// Text joined to a shared text, as to a string.
inline std::string operator+(std::string text, const SharedText& more) {
  return text += more.str();
}
inline std::string operator+(const SharedText& text, std::string_view more) {
  return text.str() + std::string(more);
}

}  // namespace wctmon
