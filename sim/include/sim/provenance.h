// How a run was made (docs/trace-schema.md#provenance): the build, the command line, and the
// caller's HCOMM_* and HCCL_* variables (docs/scenario-format.md#environment). The library
// reads its knobs from the process environment, and only under these two prefixes
// (hcomm/src/core/config.cpp, algo_knob.cpp), so a run is hermetic when this process has none of
// them but the scenario's hcomm_env.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace sim {

struct CallerEnv {
  std::vector<std::string> ignored;                              ///< names removed, sorted
  std::vector<std::pair<std::string, std::string>> inherited;    ///< (name, value) kept, sorted
  std::vector<std::string> unread;  ///< of those kept, the names hcomm reads no knob from (HCCL_CONNECT_TIMEOUT, ...)
};

/// inherit false: remove every HCOMM_*/HCCL_* variable from this process's environment (children
/// started afterwards do not see them either) and list their names. inherit true: keep them, each
/// checked as the library would read it (hcomm_config_check); the first bad one makes this false
/// with `*why` naming the variable and its value.
bool take_caller_env(bool inherit, CallerEnv* out, std::string* why);

/// The one stderr line about the ignored variables ("" when there are none).
std::string env_ignored_note(const CallerEnv& e);

/// For the trace's provenance (docs/trace-schema.md#provenance): env_ignored as a JSON array of
/// names, env_inherited as a JSON object of name: value.
std::string env_ignored_json(const CallerEnv& e);
std::string env_inherited_json(const CallerEnv& e);

/// `prog` and `args` as one shell command line: words other than [A-Za-z0-9_./:=@%+,-] characters
/// single-quoted.
std::string shell_words(const std::string& prog, const std::vector<std::string>& args);

/// The project version (CMake's PROJECT_VERSION) and the git commit the build was made from
/// ("unknown" outside a git checkout; "-dirty" appended when tracked files differed from it).
const char* build_version();
const char* build_commit();

}  // namespace sim
