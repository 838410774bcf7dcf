#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "model/incident.h"
#include "model/wait_model.h"
#include "wctmon/v1/incident.pb.h"
#include "wctmon/v1/wait_chain.pb.h"

namespace google::protobuf {
class Message;
}

namespace wctmon::wire {

/// A wall-clock time as a protobuf Timestamp, and back.
[[nodiscard]] google::protobuf::Timestamp toTimestamp(std::chrono::system_clock::time_point t);
[[nodiscard]] std::chrono::system_clock::time_point fromTimestamp(
    const google::protobuf::Timestamp& t);

/// The proto twins of the domain enums.
[[nodiscard]] v1::ObjectType toProto(ObjectType type);
[[nodiscard]] v1::ObjectStatus toProto(ObjectStatus status);
[[nodiscard]] v1::IncidentKind toProto(IncidentKind kind);
/// None for INCIDENT_KIND_UNSPECIFIED and values this build does not know.
[[nodiscard]] std::optional<IncidentKind> fromProto(v1::IncidentKind kind);

/// The proto twin of a domain analysis result.
[[nodiscard]] v1::AnalyzeResult toProto(const AnalysisResult& result);

/// The proto twin of an incident.
[[nodiscard]] v1::Incident toProto(const Incident& incident);

/// The proto3 JSON mapping of `message`, with field names as in the .proto (snake_case).
[[nodiscard]] std::string toJson(const google::protobuf::Message& message, bool pretty = true);

/// The proto twins of an incident's parts, and back (how the incident store keeps them). Strings
/// go out as valid UTF-8; an enum value this build does not know comes back as unknown.
[[nodiscard]] v1::WaitChain toProto(const WaitChain& chain);
[[nodiscard]] v1::ThreadCapture toProto(const ThreadCapture& capture);
[[nodiscard]] v1::IncidentProcess toProto(const IncidentProcess& process);
[[nodiscard]] WaitChain fromProto(const v1::WaitChain& chain);
[[nodiscard]] ThreadCapture fromProto(const v1::ThreadCapture& capture);
[[nodiscard]] IncidentProcess fromProto(const v1::IncidentProcess& process);
[[nodiscard]] v1::Dump toProto(const DumpRecord& dump);
[[nodiscard]] DumpRecord fromProto(const v1::Dump& dump);

/// The domain twins of what the API returns (wctctl draws them as wctmon does). A kind, state or
/// enum value this build does not know reads as the first kind and state, or as unknown.
[[nodiscard]] ThreadRef fromProto(const v1::ThreadRef& ref);
[[nodiscard]] AnalysisResult fromProto(const v1::AnalyzeResult& result);
[[nodiscard]] Incident fromProto(const v1::Incident& incident);

}  // namespace wctmon::wire
