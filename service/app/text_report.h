#pragma once

#include <ostream>

#include "core/wait_model.h"

namespace wctmon::app {

/// Writes the human form of an analysis: a summary, the deadlocks, then one tree per thread in
/// the style of the WCT sample. With `only_waiting`, threads whose chain ends at their own
/// ownerless wait are left out.
void writeTextReport(std::ostream& out, const AnalysisResult& result, bool only_waiting);

/// Writes one chain as an indented tree, `indent` spaces in.
void writeChain(std::ostream& out, const WaitChain& chain, std::size_t indent = 0);

}  // namespace wctmon::app
