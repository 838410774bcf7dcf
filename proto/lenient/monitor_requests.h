#pragma once

// The requests of wctmon.v1.Monitor, parsed leniently (lenient/unreadable_requests.h).

#include "lenient/unreadable_requests.h"
#include "wctmon/v1/monitor.pb.h"

WCTMON_LENIENT_REQUEST(wctmon::v1::GetStatusRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::ListTargetsRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::AddTargetRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::RemoveTargetRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::AnalyzeProcessRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::DumpProcessRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::ListProcessesRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::ListIncidentsRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::GetIncidentRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::WatchIncidentsRequest);
WCTMON_LENIENT_REQUEST(wctmon::v1::ReloadConfigRequest);
