#pragma once

// What the API's requests ask for, in the core's terms: every field a client sends is checked
// here, once, before any work is done. A request that asks for something impossible is an
// kInvalidArgument error that says which field and why.

#include <string>

#include "core/analyzer.h"
#include "core/config.h"
#include "core/ports/incident_repository.h"
#include "model/result.h"
#include "wctmon/v1/monitor.pb.h"

namespace wctmon::api {

/// The page size of ListIncidents when none is asked, and the largest one given.
inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;

/// One page of ListIncidents: the query (for one more incident than the page, to know whether
/// there is a next page) and the page's size.
struct IncidentPage {
  IncidentQuery query;
  int size = kDefaultPageSize;
};
[[nodiscard]] Result<IncidentPage> incidentPageOf(const v1::ListIncidentsRequest& request);

/// The token of the page after the one that ends with `last`.
[[nodiscard]] std::string pageToken(const Incident& last);

/// A target added through the API, checked by the configuration file's rules (its errors name
/// the same JSON pointers) against the running configuration's defaults.
[[nodiscard]] Result<TargetConfig> targetOf(const v1::Target& target, const Config& defaults);

/// An on-demand analysis: the process and how to analyse it.
struct AnalysisRequest {
  Pid pid;
  AnalyzeOptions options;
};
[[nodiscard]] Result<AnalysisRequest> analysisOf(const v1::AnalyzeProcessRequest& request);

}  // namespace wctmon::api
