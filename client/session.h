#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>
#include <vector>

#include "client/connection.h"
#include "client/output.h"

namespace wctmon::client {

class Table;

/// One run of a command: the connection, how to print, and the calls with their failures
/// reported as one line each ("wctctl: SERVER: REASON").
class Session {
 public:
  Session(Connection& connection, OutputOptions output)
      : connection_(connection), output_(std::move(output)) {}

  [[nodiscard]] Connection& connection() { return connection_; }
  [[nodiscard]] const OutputOptions& output() const { return output_; }
  [[nodiscard]] bool wide() const { return output_.format == OutputFormat::kWide; }
  /// Whether the results are data for programs (json, yaml, jsonpath, protojson): printData.
  [[nodiscard]] bool data() const { return isData(output_); }
  /// Whether the results are names (-o name): printNames.
  [[nodiscard]] bool names() const { return output_.format == OutputFormat::kName; }

  /// Calls `method` of the Monitor stub; on failure reports it and returns false (exitCode()
  /// then says how to exit).
  template <typename Request, typename Response>
  bool call(grpc::Status (v1::Monitor::Stub::*method)(grpc::ClientContext*, const Request&,
                                                      Response*),
            const Request& request, Response& response) {
    const auto context = connection_.context();
    return succeeded((connection_.monitor().*method)(context.get(), request, &response));
  }

  /// Whether `status` is OK; otherwise reports it.
  bool succeeded(const grpc::Status& status);
  /// Reports a failure of this session's server.
  void fail(const Failure& failure);
  /// The exit status of the last failure reported.
  [[nodiscard]] int exitCode() const { return exit_code_; }

  /// Writes `table` as -o says: cut to the terminal's width unless wide, with or without its
  /// header line (--no-headers).
  void printTable(const Table& table) const;
  /// Writes `message` as the data -o asks for (see printData below).
  void printData(const google::protobuf::Message& message, bool lean, bool stream = false) const {
    client::Session::printData(output_, message, lean, stream);
  }

  /// Whether `output` prints data for programs: json, yaml, jsonpath, protojson.
  [[nodiscard]] static bool isData(const OutputOptions& output);
  /// Writes `message` as json (plainJson, indented), yaml, the jsonpath template's text or
  /// protojson (the exact proto3 mapping). `lean` for lists (plainJson); `stream` for one
  /// message of many (watch): JSON on one line each, YAML a document each ("---").
  static void printData(const OutputOptions& output, const google::protobuf::Message& message,
                        bool lean, bool stream = false);
  /// Writes one name a line ("incident/42").
  static void printNames(const std::vector<std::string>& names);
  /// Writes text for people, every control character made visible (terminalSafe).
  static void print(std::string_view text);
  /// Writes a notice about the output, not part of it ("the 20 most recent", "no incidents"),
  /// to standard error: a pipe or a script reading the output never gets it as a line of data.
  static void notice(std::string_view text);

 private:
  Connection& connection_;
  OutputOptions output_;
  int exit_code_ = 0;
};

}  // namespace wctmon::client
