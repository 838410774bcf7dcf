#include "client/session.h"

#include <iostream>

#include "client/plain_json.h"
#include "client/table.h"
#include "client/yaml.h"
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

void Session::printTable(const Table& table) const {
  // Wide shows everything: a row longer than the terminal wraps rather than losing its end.
  print(table.render(wide() ? std::nullopt : output_.width, output_.headers));
}

bool Session::isData(const OutputOptions& output) {
  return output.format == OutputFormat::kJson || output.format == OutputFormat::kYaml ||
         output.format == OutputFormat::kJsonPath || output.format == OutputFormat::kProtoJson;
}

void Session::printData(const OutputOptions& output, const google::protobuf::Message& message,
                        bool lean, bool stream) {
  switch (output.format) {
    case OutputFormat::kProtoJson: {
      const auto json = escapeInvisible(wire::toJson(message, !stream));
      std::cout << json << (json.ends_with('\n') ? "" : "\n");
      return;
    }
    case OutputFormat::kYaml:
      std::cout << (stream ? "---\n" : "") << toYaml(plainJson(message, lean));
      return;
    case OutputFormat::kJsonPath:
      // The template's own text is the user's ("\t", "\n"); the values come from the service.
      std::cout << output.jsonpath->render(plainJson(message, lean), [](const std::string& v) {
        return wire::terminalSafe(v, false);
      });
      return;
    default:
      std::cout << jsonText(plainJson(message, lean), stream) << "\n";
      return;
  }
}

void Session::printNames(const std::vector<std::string>& names) {
  for (const auto& name : names) std::cout << wire::terminalSafe(name, false) << "\n";
}

void Session::print(std::string_view text) { std::cout << wire::terminalSafe(text); }

void Session::notice(std::string_view text) {
  std::cout.flush();  // after the output it is about
  std::cerr << wire::terminalSafe(text);
}

}  // namespace wctmon::client
