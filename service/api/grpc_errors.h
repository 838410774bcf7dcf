#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <optional>

#include "api/tokens.h"
#include "model/result.h"

namespace wctmon::api {

/// The one place domain errors become gRPC status codes.
[[nodiscard]] grpc::Status toGrpcStatus(const Error& error);

/// The status of a refused call (UNAUTHENTICATED or PERMISSION_DENIED), naming the role needed
/// and never the token presented.
[[nodiscard]] grpc::Status refusalStatus(Refusal refusal, Role required);

/// INVALID_ARGUMENT for a request the server could not read (lenient/unreadable_requests.h): gRPC
/// itself would answer UNIMPLEMENTED, as though the method did not exist. Nothing for one it read.
[[nodiscard]] std::optional<grpc::Status> unreadableRequest(
    const google::protobuf::Message& request);

}  // namespace wctmon::api
