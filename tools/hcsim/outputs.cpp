// The output-path rule of every command (outputs.h, docs/tools.md#outputs).
#include "outputs.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <tuple>

namespace hcsim {
namespace {

// Which file a path names, or would name once created: an existing one by device and inode
// (through symlinks; hard links share the inode); a missing one by its directory's device and
// inode and its last component, after following any dangling symlinks to the name that writing
// would create.
struct Key {
  bool exists = false, special = false;  // special: a device, FIFO or socket
  bool dir = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // a missing file's last component (or its whole path if its directory is missing too)
  bool operator<(const Key& o) const { return std::tie(exists, dev, ino, name) < std::tie(o.exists, o.dev, o.ino, o.name); }
  bool operator==(const Key& o) const { return exists == o.exists && dev == o.dev && ino == o.ino && name == o.name; }
};

std::string dir_part(const std::string& p) {
  const auto k = p.find_last_of('/');
  return k == std::string::npos ? "" : p.substr(0, k + 1);
}

Key key_of(const std::string& path) {
  Key k;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    k.exists = true;
    k.dev = st.st_dev;
    k.ino = st.st_ino;
    k.dir = S_ISDIR(st.st_mode);
    k.special = !S_ISREG(st.st_mode) && !k.dir;
    return k;
  }
  std::string p = path;
  for (int hop = 0; hop < 40; ++hop) {  // a dangling symlink: writing creates its target
    struct stat ls {};
    if (::lstat(p.c_str(), &ls) != 0 || !S_ISLNK(ls.st_mode)) break;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n <= 0) break;
    const std::string t(buf, static_cast<std::size_t>(n));
    p = t[0] == '/' ? t : dir_part(p) + t;
  }
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const std::string dir = dir_part(p), base = p.substr(dir.size());
  struct stat ds {};
  if (base.empty() || base == "." || base == ".." || ::stat(dir.empty() ? "." : dir.c_str(), &ds) != 0) {
    k.name = p;  // cannot be created: compared by its text
    return k;
  }
  k.dev = ds.st_dev;
  k.ino = ds.st_ino;
  k.name = base;
  return k;
}

bool has_kind(const std::string& path, const std::vector<std::string>& kinds) {
  std::size_t want = 0;
  for (const auto& k : kinds) want = std::max(want, k.size());
  std::string head(want, '\0');
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  head.resize(std::fread(&head[0], 1, want, f));
  std::fclose(f);
  for (const auto& k : kinds)
    if (!k.empty() && head.compare(0, k.size(), k) == 0) return true;
  return false;
}

}  // namespace

std::string check_outputs(const std::vector<InputFile>& inputs, const std::vector<OutputFile>& outputs, bool force) {
  std::vector<std::pair<Key, const InputFile*>> in;
  for (const auto& i : inputs) {
    if (i.path.empty()) continue;
    Key k = key_of(i.path);
    if (k.exists) in.emplace_back(k, &i);
  }
  std::map<Key, const OutputFile*> seen;
  for (const auto& o : outputs) {
    const Key k = key_of(o.path);
    if (k.special) continue;  // a device, FIFO or socket: nothing on disk is replaced
    for (const auto& [ik, i] : in)
      if (k == ik)
        return o.option + " " + o.path + " is the same file as " + i->what + " " + i->path +
               ": an output may not replace an input (nothing written)";
    if (auto [it, fresh] = seen.emplace(k, &o); !fresh)
      return o.option + " " + o.path + " is the same file as " + it->second->option + " " + it->second->path +
             ": two outputs may not share a file (nothing written)";
  }
  for (const auto& o : outputs) {
    if (o.kinds.empty()) continue;
    struct stat st {};
    if (::stat(o.path.c_str(), &st) != 0) continue;  // to be created
    if (S_ISDIR(st.st_mode)) return o.option + " " + o.path + " is a directory; give a file name";
    if (!S_ISREG(st.st_mode) || force || has_kind(o.path, o.kinds)) continue;
    return o.option + " " + o.path + " exists and is not " + o.kind_name + (st.st_size == 0 ? " (an empty file)" : "") +
           "; refusing to replace it (--force replaces it)";
  }
  return std::string();
}

std::vector<OutputFile> trace_side_files(const std::string& option, const std::string& db) {
  std::vector<OutputFile> v;
  v.push_back({option + "'s lock file", db + ".lock", {}, ""});
  for (const char* s : {"-journal", "-wal", "-shm"}) v.push_back({option + "'s " + (s + 1) + " file", db + s, {}, ""});
  return v;
}

}  // namespace hcsim
