#pragma once

// Requests the server cannot read are answered INVALID_ARGUMENT, with why, by the service
// itself. gRPC's callback handlers (1.51, and later ones alike) answer any request that fails to
// parse with UNIMPLEMENTED and no message: as though the method did not exist, for a truncated
// message or one nesting groups deeper than protobuf's limit of 100 alike.
//
// So the requests of the service's methods are parsed leniently: one that cannot be read is left
// empty but for a mark, an unknown field, and handed to the method, which refuses it
// (requestUnreadable). These are full specializations of gRPC's SerializationTraits: they must
// be seen by every translation unit that (de)serializes the request types, that is the
// generated gRPC code, which is compiled with this header included first (proto/CMakeLists.txt).

#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <string>

namespace wctmon::lenient {

/// The field that marks a request that could not be read: the highest field number protobuf
/// allows, with a text no client sends.
inline constexpr int kUnreadableField = 536870911;
inline constexpr const char* kUnreadableMark = "wctmon: this request could not be read";

/// Parses `buffer` into `message`; when it cannot be read, leaves `message` empty but for the
/// mark. Never fails: the method says what was wrong.
template <class Message>
grpc::Status deserialize(grpc::ByteBuffer* buffer, Message* message) {
  const auto status = grpc::GenericDeserialize<grpc::ProtoBufferReader, Message>(buffer, message);
  if (status.ok()) return status;
  message->Clear();
  message->GetReflection()->MutableUnknownFields(message)->AddLengthDelimited(kUnreadableField,
                                                                              kUnreadableMark);
  return grpc::Status::OK;
}

/// Whether `request` is one that could not be read.
inline bool unreadable(const google::protobuf::Message& request) {
  const auto& unknown = request.GetReflection()->GetUnknownFields(request);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& field = unknown.field(i);
    if (field.number() == kUnreadableField &&
        field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        field.length_delimited() == kUnreadableMark) {
      return true;
    }
  }
  return false;
}

}  // namespace wctmon::lenient

/// Makes `Type` a request parsed leniently (see above); written once per request type.
#define WCTMON_LENIENT_REQUEST(Type)                                                             \
  template <>                                                                                    \
  class grpc::SerializationTraits<Type, void> {                                                  \
   public:                                                                                       \
    static grpc::Status Serialize(const grpc::protobuf::MessageLite& message,                    \
                                  grpc::ByteBuffer* buffer, bool* own_buffer) {                  \
      return grpc::GenericSerialize<grpc::ProtoBufferWriter, Type>(message, buffer, own_buffer); \
    }                                                                                            \
    static grpc::Status Deserialize(grpc::ByteBuffer* buffer, Type* message) {                   \
      return wctmon::lenient::deserialize(buffer, message);                                      \
    }                                                                                            \
  }
