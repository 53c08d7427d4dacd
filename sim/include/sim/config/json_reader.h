// Strict JSON reading for hcsim's input files: unknown keys are errors (fail closed), every problem
// is collected as "file: /json/pointer: reason" (up to a limit), nothing throws past this layer.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sim {

using json = nlohmann::json;

class Diagnostics {
 public:
  explicit Diagnostics(std::string file, std::size_t limit = 50) : file_(std::move(file)), limit_(limit) {}
  void error(const std::string& pointer, const std::string& why);
  /// A problem that does not make the input invalid (printed, not counted as an error).
  void warn(const std::string& pointer, const std::string& why);
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool ok() const { return count_ == 0; }
  std::size_t count() const { return count_; }
  const std::vector<std::string>& messages() const { return msgs_; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::size_t limit_, count_ = 0;
  std::vector<std::string> msgs_, warnings_;
};

constexpr std::size_t kMaxJsonDepth = 64;

/// Read and parse a JSON file. Rejects missing/unreadable files, directories and other non-regular
/// files, files over 64 MiB, nesting deeper than 64 levels and syntax errors, reporting byte offsets.
std::optional<json> read_json_file(const std::string& path, Diagnostics& d);
/// The same checks on text already in memory (empty, too deep, syntax). Linear in the text size.
std::optional<json> parse_json_text(const std::string& text, Diagnostics& d);
/// Deepest nesting of arrays and objects in `text`, counting brackets outside strings.
std::size_t max_json_depth(const std::string& text);

/// View of one JSON object that checks its keys against an allowed list.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string pointer, Diagnostics& d, std::initializer_list<const char*> allowed);
  bool valid() const { return valid_; }
  const std::string& pointer() const { return ptr_; }
  std::string child(const std::string& key) const;
  const json* get(const char* key, bool required) const;
  std::optional<std::string> str(const char* key, bool required) const;
  /// A name (of a scenario, topology, plan, ...): a string that name_problem accepts; an error
  /// at the key otherwise (the string is still returned, so that later checks can go on).
  std::optional<std::string> name(const char* key, bool required) const;
  std::optional<bool> boolean(const char* key, bool required) const;
  std::optional<std::uint64_t> uint(const char* key, bool required, std::uint64_t lo, std::uint64_t hi) const;
  std::optional<double> number(const char* key, bool required, double lo, double hi) const;
  std::optional<std::uint64_t> bandwidth(const char* key, bool required) const;  ///< bytes/s
  std::optional<std::uint64_t> size(const char* key, bool required) const;       ///< bytes
  std::optional<std::uint64_t> duration(const char* key, bool required) const;   ///< ps
  Diagnostics& diag() const { return d_; }

 private:
  const json& j_;
  std::string ptr_;
  Diagnostics& d_;
  bool valid_ = true;
};

/// What a document is by its top level: "scenario" ("format": "hcsim-scenario", or a workload,
/// faults, expect, hcomm_env or a topology reference), "topology" ("format": "hcsim-topology",
/// or servers, server_groups, switches, links, fabric), "rank table" (server_count, server_list,
/// super_pod_list), "plan" ("format": "hcsim-plan", or sweep, workloads, prices, target,
/// trace_routes), or "" when it says nothing either way.
std::string document_kind(const json& j);
/// When `j` is recognisably another kind than `want` ("scenario", "topology"): the reason to
/// report at "/" ("is a scenario, not a topology: pass it to hcsim run / hcsim validate"), so that
/// the wrong file is named as such rather than as a list of unknown keys. "" otherwise.
std::string wrong_kind(const json& j, const std::string& want);

/// Why `n` cannot be a name: empty, or a control character (C0 U+0000-U+001F, DEL U+007F, or C1
/// U+0080-U+009F in UTF-8: terminal escapes in logs, tables and file names). "" when it can.
std::string name_problem(const std::string& n);

/// A dotted quad of four decimal fields 0-255, without leading zeros ("10.0.01.2" could be read
/// as octal) or anything else; nullopt otherwise.
std::optional<std::uint32_t> parse_ipv4(const std::string& s);
std::string format_ipv4(std::uint32_t ip);

}  // namespace sim
