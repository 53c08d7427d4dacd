// hcsim run's live view (README, CLI reference): the progress line and the --top view of a running
// simulation, drawn on stderr from sim::LiveSnapshot (sim/live.h). Rendering only; the snapshot is
// taken by the simulator. (`hcsim top DB`, for finished traces, is top_view.{h,cpp}.)
#pragma once
#include <cstdio>
#include <string>

#include "sim/live.h"

namespace hcsim {

/// "hcsim: 3.0 s | sim 1.234 ms | ops 2/4 (slowest rank; fastest 3) | 2.31 M events/s"
std::string progress_line(const sim::LiveSnapshot& s);
/// The --top view: sim time, events/s, operations done per rank (min / median / max), the busiest
/// links and ports so far, the error counters. Lines end with '\n'.
std::string top_block(const sim::LiveSnapshot& s, const std::string& title);

/// Draws reports on `out`: on a terminal the progress line is rewritten in place ("\r", erase line)
/// and the top view redrawn after clearing the screen; otherwise each report is printed as plain
/// lines (a progress line, or a top block followed by a blank line).
class LiveRenderer {
 public:
  enum Mode { kProgress, kTop };
  LiveRenderer(Mode mode, bool tty, std::FILE* out, std::string title) : mode_(mode), tty_(tty), out_(out), title_(std::move(title)) {}
  void operator()(const sim::LiveSnapshot& s);
  /// After the run: erases a progress line left on a terminal.
  void finish();
  std::size_t reports() const { return reports_; }

 private:
  Mode mode_;
  bool tty_;
  std::FILE* out_;
  std::string title_;
  std::size_t reports_ = 0;
};

}  // namespace hcsim
