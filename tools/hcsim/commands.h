// hcsim subcommands (docs/architecture.md#tools): one file per command (cmd_<name>.cpp), the table
// main.cpp dispatches on, and the one option parser every command uses, so that each answers
// --help / -h and reports a usage error (exit 2) with its own usage.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sim {
struct ScenarioOverrides;
}

namespace hcsim {

/// Exit codes of every command (README, "CLI reference").
enum Exit : int { kOk = 0, kExpectationFailed = 1, kBadInput = 2 };

struct Command {
  const char* name;      ///< "run"
  const char* synopsis;  ///< "run [SCENARIO] [--db FILE] ...", after "usage: hcsim "
  const char* summary;   ///< what it does, lines indented by 8 (hcsim --help lists it under the synopsis)
  int (*main)(const std::vector<std::string>& args);  ///< the arguments after the command name
};

extern const Command kRun, kValidate, kTopo, kTrace, kTop, kHealth, kPlot, kPlan, kRoutes, kDiff, kSummary, kDiscover, kExec;

/// One option. A flag has an empty `value`; an option taking a value ("--db FILE", also
/// "--db=FILE") names it in `value` and says what is missing in `needs` ("a file name").
struct Option {
  std::string name;   ///< "--db"
  std::string alias;  ///< "-q", or empty
  std::string value;  ///< "FILE", or empty for a flag
  std::string needs;  ///< "a file name": "--db needs a file name" when the value is missing
  std::string help;   ///< one line for --help
  /// Takes the value (empty for a flag); returns an error message (a usage error) or "".
  std::function<std::string(const std::string& value)> set;
};

/// Arguments that are not options (after "--", everything is one).
struct Positional {
  std::string name;  ///< "FILE..."
  std::string help;
  std::function<std::string(const std::string& arg)> set;  ///< returns an error message or ""
};

/// `--fault 'TYPE K=V ...'` and `--set /POINTER=VALUE` of the commands that run a scenario (run,
/// exec): each adds to `ov`, checked as the scenario's own entries are.
Option fault_option(sim::ScenarioOverrides& ov, const std::string& help);
Option set_option(sim::ScenarioOverrides& ov, const std::string& help);

/// The option `-n N` of the trace readers: N from 1 to 999999 into *out, else the usage error.
std::string parse_count(const std::string& option, const std::string& v, std::size_t* out);

/// A command's command line: parses it and prints its help and usage errors.
class Args {
 public:
  Args(const Command& cmd, std::vector<Option> options, Positional positional);
  /// Options and positionals left to right. nullopt: go on; otherwise the command exits with it
  /// (0 after printing --help to stdout, 2 after a usage error on stderr).
  std::optional<int> parse(const std::vector<std::string>& args) const;
  /// "hcsim: MSG", a blank line and the command's help on stderr; returns 2.
  int usage_error(const std::string& msg) const;
  /// "usage: hcsim SYNOPSIS", the summary, arguments and options.
  std::string help() const;

 private:
  const Command& cmd_;
  std::vector<Option> options_;
  Positional positional_;
};

}  // namespace hcsim
