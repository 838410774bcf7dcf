#pragma once

#include <memory>

#include "core/alert.h"
#include "core/config.h"
#include "platform/process_catalog.h"
#include "platform/service_host.h"

namespace wctmon {

/// The process catalog of this platform.
[[nodiscard]] std::unique_ptr<ProcessCatalog> makeProcessCatalog();

/// The alert sink for `kind`; journald falls back to syslog where journald is absent. nullptr
/// for kNone.
[[nodiscard]] std::unique_ptr<AlertSink> makeAlertSink(AlertSinkKind kind);

/// The supervisor interface of this platform.
[[nodiscard]] std::unique_ptr<ServiceHost> makeServiceHost();

}  // namespace wctmon
