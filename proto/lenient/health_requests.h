#pragma once

// The request of grpc.health.v1.Health, parsed leniently (lenient/unreadable_requests.h).

#include "grpc/health/v1/health.pb.h"
#include "lenient/unreadable_requests.h"

WCTMON_LENIENT_REQUEST(grpc::health::v1::HealthCheckRequest);
