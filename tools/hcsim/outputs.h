// The one rule for the files hcsim's commands and hcomm_test write (docs/tools.md#outputs): no
// output may be the same file as an input of the command or as another of its outputs (device and
// inode, through symlinks and hard links; a name that does not exist yet by its directory and last
// component, after following a dangling symlink), and an existing file is replaced only if it is
// one the option writes (recognised by its first bytes) or with --force. Plain POSIX: no SQLite,
// no SystemC.
#pragma once
#include <string>
#include <vector>

namespace hcsim {

/// A file the command reads: `what` names it in messages ("input SCENARIO", "the scenario's topology").
struct InputFile {
  std::string what, path;
};

/// A file the command will write.
struct OutputFile {
  std::string option;  ///< how the user named it: "--junit", "-o", "--db's lock file"
  std::string path;
  /// The first bytes of the files this option writes (any one matches). Empty: no check of what
  /// an existing file is (the caller has its own: a trace for --db, a plan directory's marker).
  std::vector<std::string> kinds;
  std::string kind_name;  ///< "a JUnit report of hcsim diff", for the refusal
};

/// "" when every output may be written; otherwise why not (one line, without the program name),
/// for an exit 2 before anything is written. An output that resolves to an input or to another
/// output is refused even with `force`; an existing regular file that is not of the output's kind
/// (an empty one too) is refused without `force`; a directory is refused (a file name is needed).
/// A device, FIFO or socket is written to as it is (nothing to replace): /dev/null, /dev/stdout.
/// An input that does not exist is skipped (the command reports it).
std::string check_outputs(const std::vector<InputFile>& inputs, const std::vector<OutputFile>& outputs, bool force);

/// The side files a trace database at `db` creates or removes (FILE.lock, FILE-journal, -wal,
/// -shm), as outputs of `option` for check_outputs (same-file checks only).
std::vector<OutputFile> trace_side_files(const std::string& option, const std::string& db);

}  // namespace hcsim
