#pragma once

#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#pragma GCC diagnostic pop

namespace wctmon::api {

/// Server reflection v1 (grpc.reflection.v1.ServerReflection), which gRPC's library does not
/// serve here (it has v1alpha only): the services of the server, and the descriptors of the
/// files that declare them and their messages, from the descriptors compiled into this program.
/// Each file comes with every file it imports.
class ReflectionService final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  /// `services`: the fully qualified names of the services the server offers.
  explicit ReflectionService(std::vector<std::string> services);

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  const std::vector<std::string> services_;
};

}  // namespace wctmon::api
