#include "api/reflection_service.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <set>
#include <utility>

namespace wctmon::api {

namespace pb = google::protobuf;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

namespace {

/// The answers of one stream.
class Answers {
 public:
  explicit Answers(const std::vector<std::string>& services) : services_(services) {}

  void answer(const ServerReflectionRequest& request, ServerReflectionResponse& response) {
    const auto* pool = pb::DescriptorPool::generated_pool();
    response.set_valid_host(request.host());
    *response.mutable_original_request() = request;
    switch (request.message_request_case()) {
      case ServerReflectionRequest::kListServices:
        for (const auto& name : services_) {
          response.mutable_list_services_response()->add_service()->set_name(name);
        }
        return;
      case ServerReflectionRequest::kFileByFilename:
        return sendFile(pool->FindFileByName(request.file_by_filename()),
                        "no file " + request.file_by_filename(), response);
      case ServerReflectionRequest::kFileContainingSymbol:
        return sendFile(pool->FindFileContainingSymbol(request.file_containing_symbol()),
                        "no symbol " + request.file_containing_symbol(), response);
      case ServerReflectionRequest::kFileContainingExtension: {
        const auto& e = request.file_containing_extension();
        const auto* type = pool->FindMessageTypeByName(e.containing_type());
        const auto* extension =
            type == nullptr ? nullptr : pool->FindExtensionByNumber(type, e.extension_number());
        return sendFile(
            extension == nullptr ? nullptr : extension->file(),
            "no extension " + std::to_string(e.extension_number()) + " of " + e.containing_type(),
            response);
      }
      case ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const auto* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
        if (type == nullptr) {
          return fail(grpc::StatusCode::NOT_FOUND,
                      "no message type " + request.all_extension_numbers_of_type(), response);
        }
        std::vector<const pb::FieldDescriptor*> extensions;
        pool->FindAllExtensions(type, &extensions);
        auto* numbers = response.mutable_all_extension_numbers_response();
        numbers->set_base_type_name(type->full_name());
        for (const auto* e : extensions) numbers->add_extension_number(e->number());
        return;
      }
      case ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
        break;
    }
    fail(grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing", response);
  }

 private:
  static void fail(grpc::StatusCode code, const std::string& message,
                   ServerReflectionResponse& response) {
    auto* error = response.mutable_error_response();
    error->set_error_code(static_cast<int>(code));
    error->set_error_message(message);
  }

  /// `file` first, then every file it imports, transitively: each answer stands on its own.
  void sendFile(const pb::FileDescriptor* file, const std::string& missing,
                ServerReflectionResponse& response) {
    if (file == nullptr) return fail(grpc::StatusCode::NOT_FOUND, missing, response);
    auto* files = response.mutable_file_descriptor_response();
    std::vector<const pb::FileDescriptor*> todo{file};
    std::set<std::string> added;
    while (!todo.empty()) {
      const auto* f = todo.back();
      todo.pop_back();
      if (!added.insert(f->name()).second) continue;
      pb::FileDescriptorProto proto;
      f->CopyTo(&proto);
      files->add_file_descriptor_proto(proto.SerializeAsString());
      for (int i = 0; i < f->dependency_count(); ++i) todo.push_back(f->dependency(i));
    }
  }

  const std::vector<std::string>& services_;
};

}  // namespace

ReflectionService::ReflectionService(std::vector<std::string> services)
    : services_(std::move(services)) {}

grpc::Status ReflectionService::ServerReflectionInfo(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream) {
  Answers answers(services_);
  ServerReflectionRequest request;
  while (stream->Read(&request)) {
    ServerReflectionResponse response;
    answers.answer(request, response);
    if (!stream->Write(response)) break;
  }
  return grpc::Status::OK;
}

}  // namespace wctmon::api
