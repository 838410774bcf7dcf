#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

#include "client/connection.h"

namespace wctmon::client {

/// How results are printed (-o).
enum class OutputFormat { kTable, kWide, kJson };

/// One run of a command: the connection, how to print, and the calls with their failures
/// reported as one line each ("wctctl: SERVER: REASON").
class Session {
 public:
  Session(Connection& connection, OutputFormat format) : connection_(connection), format_(format) {}

  [[nodiscard]] Connection& connection() { return connection_; }
  [[nodiscard]] bool json() const { return format_ == OutputFormat::kJson; }
  [[nodiscard]] bool wide() const { return format_ == OutputFormat::kWide; }

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

  /// Writes text for people, every control character made visible (terminalSafe).
  static void print(std::string_view text);
  /// Writes a notice about the output, not part of it ("the 20 most recent"), to standard
  /// error: a pipe or a script reading the output never gets it as a line of data.
  static void notice(std::string_view text);
  /// Writes `message` as its proto3 JSON (the .proto's field names), pretty or on one line.
  static void printJson(const google::protobuf::Message& message, bool one_line = false);

 private:
  Connection& connection_;
  OutputFormat format_;
  int exit_code_ = 0;
};

}  // namespace wctmon::client
