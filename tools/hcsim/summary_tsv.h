// The timing golden (docs/tools.md#summary): a trace's summary table as a stable, reviewable
// TSV, one row per workload step, that hcsim summary writes and hcsim diff compares a trace with.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hcsim {

class TraceDb;

/// One workload step: its operation and size over all its repetitions.
struct TimingRow {
  std::int64_t step = 0, bytes = 0, reps = 0;
  std::string op, algorithm;  ///< algorithm: the distinct operations.algorithm, sorted, ","-joined; "-" when none
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;  ///< time_us: median over the repetitions
};

/// The first line of a timing golden (what identifies one).
extern const char* const kSummaryHeader;

/// The rows of a finished trace, by step.
bool timing_rows(const TraceDb& db, std::vector<TimingRow>* out, std::string* why);
/// The TSV text of `rows` (the header and column lines first).
std::string timing_tsv(const std::vector<TimingRow>& rows);
/// Does FILE begin with kSummaryHeader?
bool is_timing_tsv(const std::string& file);
/// Reads a timing golden; false with "FILE:LINE: reason" on anything malformed.
bool read_timing_tsv(const std::string& file, std::vector<TimingRow>* out, std::string* why);

}  // namespace hcsim
