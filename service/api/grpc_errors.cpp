#include "api/grpc_errors.h"

#include <string>

#include "lenient/unreadable_requests.h"

namespace wctmon::api {

grpc::Status toGrpcStatus(const Error& error) {
  const auto code = [&] {
    switch (error.code) {
      case ErrorCode::kNoSuchProcess:
      case ErrorCode::kNoSuchThread:
      case ErrorCode::kNotFound:
        return grpc::StatusCode::NOT_FOUND;
      case ErrorCode::kAccessDenied:
        return grpc::StatusCode::PERMISSION_DENIED;
      case ErrorCode::kInvalidArgument:
        return grpc::StatusCode::INVALID_ARGUMENT;
      case ErrorCode::kDamaged:
        return grpc::StatusCode::DATA_LOSS;
      case ErrorCode::kUnsupported:
        return grpc::StatusCode::UNIMPLEMENTED;
      case ErrorCode::kCancelled:
        return grpc::StatusCode::DEADLINE_EXCEEDED;
      case ErrorCode::kBusy:
      case ErrorCode::kIo:
        return grpc::StatusCode::UNAVAILABLE;
      case ErrorCode::kInternal:
        break;
    }
    return grpc::StatusCode::INTERNAL;
  }();
  return {code, error.message};
}

grpc::Status refusalStatus(Refusal refusal, Role required) {
  const std::string role(roleName(required));
  if (refusal == Refusal::kPermissionDenied) {
    return {grpc::StatusCode::PERMISSION_DENIED,
            "this call needs the " + role + " token; the reader token was given"};
  }
  return {grpc::StatusCode::UNAUTHENTICATED,
          "this call needs the " + role +
              " token as \"authorization: Bearer TOKEN\" metadata; none matched"};
}

std::optional<grpc::Status> unreadableRequest(const google::protobuf::Message& request) {
  if (!lenient::unreadable(request)) return std::nullopt;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "the request could not be read as a " + request.GetTypeName() +
                          ": not a valid message of that type (cut short, a field of the wrong "
                          "wire type, or nested deeper than 100 levels)");
}

}  // namespace wctmon::api
