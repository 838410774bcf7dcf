#include "client/session.h"

#include <iostream>

#include "wire/proto_convert.h"
#include "wire/terminal_text.h"

namespace wctmon::client {

bool Session::succeeded(const grpc::Status& status) {
  if (status.ok()) return true;
  fail(connection_.explain(status));
  return false;
}

void Session::fail(const Failure& failure) {
  exit_code_ = failure.exit_code;
  // One line, whatever the server put in its message (the reasons of a refused reload are lines).
  std::string reason = failure.reason;
  for (auto at = reason.find('\n'); at != std::string::npos; at = reason.find('\n', at)) {
    reason.replace(at, 1, "; ");
  }
  std::cout.flush();
  std::cerr << "wctctl: " << wire::terminalSafe(connection_.server() + ": " + reason, false)
            << "\n";
}

void Session::print(std::string_view text) { std::cout << wire::terminalSafe(text); }

void Session::notice(std::string_view text) {
  std::cout.flush();  // after the output it is about
  std::cerr << wire::terminalSafe(text);
}

void Session::printJson(const google::protobuf::Message& message, bool one_line) {
  const auto json = wire::toJson(message, !one_line);
  std::cout << json << (json.ends_with('\n') ? "" : "\n");
}

}  // namespace wctmon::client
