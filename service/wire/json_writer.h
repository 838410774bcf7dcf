#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "model/enum_names.h"
#include "model/incident.h"
#include "model/wait_model.h"

namespace wctmon::wire {

/// Writes `result` as the proto3 JSON mapping of wctmon.v1.AnalyzeResult (field names as in the
/// .proto, every field printed, 64-bit integers as strings), byte-for-byte what
/// toJson(toProto(result)) means but an order of magnitude faster: a result of 10,000 threads is
/// megabytes of JSON, and protobuf's reflective printer would dominate the analysis.
[[nodiscard]] std::string analysisToJson(const AnalysisResult& result);

/// The same, streamed to `out` in blocks as it is written.
void writeAnalysisJson(const AnalysisResult& result, std::FILE* out);

/// What stands for an analysis that could not be made: {"error": "why"}, a line.
[[nodiscard]] std::string analysisErrorToJson(std::string_view why);

/// The proto3 JSON mapping of a list of chains, of captures, of an incident's processes (the
/// form stores of schema 1 and 2 kept them in), and of a wctmon.v1.IncidentList.
[[nodiscard]] std::string chainsToJson(const std::vector<WaitChain>& chains);
[[nodiscard]] std::string capturesToJson(const std::vector<ThreadCapture>& captures);
[[nodiscard]] std::string processesToJson(const std::vector<IncidentProcess>& processes);
[[nodiscard]] std::string incidentsToJson(const std::vector<Incident>& incidents);
/// The proto3 JSON mapping of one wctmon.v1.Incident, as an element of the list above.
[[nodiscard]] std::string incidentToJson(const Incident& incident);

/// The same list as incidentsToJson, written to `out` one incident at a time as they come, in
/// blocks: a store of 50,000 incidents is gigabytes of JSON that need never be held at once.
class IncidentsJsonStream {
 public:
  explicit IncidentsJsonStream(std::FILE* out);
  ~IncidentsJsonStream();
  IncidentsJsonStream(const IncidentsJsonStream&) = delete;
  IncidentsJsonStream& operator=(const IncidentsJsonStream&) = delete;
  void add(const Incident& incident);
  /// Closes the list and writes out what is left; nothing may be added after.
  void finish();

 private:
  struct Writer;
  std::unique_ptr<Writer> writer_;
};

/// The proto3 JSON names of the domain enums ("OBJECT_TYPE_MUTEX", "OBJECT_STATUS_OWNED"), from
/// the table of model/enum_names.h.
[[nodiscard]] std::string_view protoName(ObjectType type);
[[nodiscard]] std::string_view protoName(ObjectStatus status);

}  // namespace wctmon::wire
