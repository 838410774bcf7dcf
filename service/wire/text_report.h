#pragma once

#include <ostream>

#include "model/wait_model.h"

namespace wctmon::wire {

/// Writes the human form of an analysis: a summary, the deadlocks, then one tree per thread in
/// the style of the WCT sample. With `only_waiting`, only chains that lead somewhere
/// (leadsSomewhere) are written.
void writeTextReport(std::ostream& out, const AnalysisResult& result, bool only_waiting);

/// Writes one chain as an indented tree, `indent` spaces in.
void writeChain(std::ostream& out, const WaitChain& chain, std::size_t indent = 0);

/// Writes one thread's captured evidence, `indent` spaces in: how it was taken, then at most
/// `max_frames` frames (instruction pointer first).
void writeCapture(std::ostream& out, const ThreadCapture& capture, std::size_t indent,
                  std::size_t max_frames);

}  // namespace wctmon::wire
