#pragma once

#include <grpcpp/support/status.h>

#include "api/tokens.h"
#include "model/result.h"

namespace wctmon::api {

/// The one place domain errors become gRPC status codes.
[[nodiscard]] grpc::Status toGrpcStatus(const Error& error);

/// The status of a refused call (UNAUTHENTICATED or PERMISSION_DENIED), naming the role needed
/// and never the token presented.
[[nodiscard]] grpc::Status refusalStatus(Refusal refusal, Role required);

}  // namespace wctmon::api
