// Read-only access to an hcsim trace (trace_db.h).
#include "trace_db.h"

#include <sqlite3.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/config/units.h"
#include "sim/trace.h"

namespace hcsim {

std::int64_t Row::i(int c) const { return sqlite3_column_int64(s_, c); }
double Row::d(int c) const { return sqlite3_column_double(s_, c); }
bool Row::null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
bool Row::number(int c) const {
  const int t = sqlite3_column_type(s_, c);
  return t == SQLITE_INTEGER || t == SQLITE_FLOAT;
}
std::string Row::s(int c) const {
  const unsigned char* t = sqlite3_column_text(s_, c);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : std::string();
}

TraceDb::~TraceDb() {
  if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // the read snapshot
  sqlite3_close(db_);
}

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::uint32_t be(const unsigned char* p, int n) {
  std::uint32_t v = 0;
  for (int k = 0; k < n; ++k) v = v << 8 | p[k];
  return v;
}

bool is_corrupt_code(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

}  // namespace

bool is_sqlite_file(const std::string& path) {
  char head[16] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == sizeof head && std::memcmp(head, "SQLite format 3", 16) == 0;
}

bool trace_lock_held(const std::string& trace_path) {
  const int fd = ::open((trace_path + ".lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;  // no lock file: no run has the trace open
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the probe's lock, if it got one
  return held;
}

bool TraceDb::open(const std::string& path, std::string* why) {
  path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) { *why = path + ": cannot open: " + std::strerror(errno); return false; }
  if (!S_ISREG(st.st_mode)) { *why = path + ": not a regular file"; return false; }
  // A run writing the trace holds the lock (checked again after reading run.status below: a run
  // may start on this path meanwhile).
  bool held = trace_lock_held(path);
  const std::string nothing_yet = path + ": being written: the run holding " + path +
                                  ".lock has committed nothing yet; try again in a moment";
  unsigned char head[100] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) { *why = path + ": cannot read: " + std::strerror(errno); return false; }
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == 0 && held) { *why = nothing_yet; return false; }
  if (n == 0) { *why = path + ": not an hcsim trace (an empty file)"; return false; }
  if (n < 16 || std::memcmp(head, "SQLite format 3", 16) != 0) {
    *why = path + ": not an hcsim trace (not an SQLite database)";
    return false;
  }
  if (n < sizeof head) {
    *why = path + ": corrupt: truncated: " + std::to_string(n) + " bytes, less than an SQLite header";
    return false;
  }
  // The header's page size and page count against the file's size (a truncated copy). Only
  // without a journal or WAL beside it: those may hold pages the file does not have yet.
  const bool wal = exists(path + "-wal"), journal = exists(path + "-journal");
  const std::uint32_t raw_page = be(head + 16, 2);
  const std::uint64_t page = raw_page == 1 ? 65536 : raw_page;
  if (page < 512 || (page & (page - 1))) {
    *why = path + ": corrupt: the header's page size " + std::to_string(page) + " is not a power of two from 512 to 65536";
    return false;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t pages = be(head + 28, 4);
  if (!wal && !journal) {
    if (size % page) {
      *why = path + ": corrupt: truncated: " + std::to_string(size) + " bytes is not a whole number of " + std::to_string(page) +
             "-byte pages";
      return false;
    }
    if (be(head + 24, 4) == be(head + 92, 4) && pages * page > size) {
      *why = path + ": corrupt: truncated: its header says " + std::to_string(pages) + " pages of " + std::to_string(page) + " bytes (" +
             std::to_string(pages * page) + " bytes), the file has " + std::to_string(size);
      return false;
    }
  }
  // A finished trace is one file nobody writes: immutable (no locks, no files created). A trace
  // being written, or one a killed run left with its WAL, is read through SQLite's locking and
  // the WAL, read-only (a WAL reader may create or update FILE-shm, the WAL's index; never
  // FILE or FILE-wal). A hot journal (a killed writer of the rollback kind) is not rolled back.
  struct stat js {};
  const bool hot = journal && ::stat((path + "-journal").c_str(), &js) == 0 && js.st_size > 0 && !held;
  const bool live = held || wal || hot;
  if (sim::open_sqlite_readonly(path, !live, &db_) != SQLITE_OK) {
    *why = path + ": cannot open: " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_busy_timeout(db_, 10000);  // the writer's WAL reset or final checkpoint: brief
  // One snapshot for every query of this reader (the first read starts it).
  if (sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    *why = path + ": cannot read the trace: " + sqlite3_errmsg(db_);
    return false;
  }
  std::string gen;
  std::string err;
  bool have_meta = false;
  if (!query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'", [&](const Row&) { have_meta = true; }, &err) ||
      (have_meta && !query("SELECT value FROM meta WHERE key='generator'", [&](const Row& r) { gen = r.s(0); }, &err))) {
    *why = sqlite3_extended_errcode(db_) == SQLITE_READONLY_ROLLBACK
               ? path + ": unfinished trace with a hot journal: " + path + "-journal holds a batch the killed run did not commit; "
                        "reading it needs that batch rolled back, which changes the file (sqlite3 " + path + " 'PRAGMA quick_check' does it)"
               : err;
    return false;
  }
  if (gen != "hcsim") {
    *why = held ? nothing_yet : path + ": not an hcsim trace (no meta generator=hcsim)";
    return false;
  }
  for (const char* t : {"run", "operations"})
    if (!has_table(t)) {
      *why = path + ": not an hcsim trace (no " + t + " table)";
      return false;
    }
  // Structure: every page of the file (a damaged page would otherwise be read silently, with
  // wrong counts, or only fail the query that reaches it). About 5 ms per MB.
  std::vector<std::string> problems;
  if (!query("PRAGMA quick_check(4)", [&](const Row& r) { problems.push_back(r.s(0)); }, &err)) {
    *why = err + " (found by PRAGMA quick_check)";
    return false;
  }
  if (problems.empty() || problems[0] != "ok") {
    std::vector<std::string> lines;  // one message may hold several lines
    for (const auto& p : problems)
      for (std::size_t a = 0; a < p.size();) {
        std::size_t b = p.find('\n', a);
        if (b == std::string::npos) b = p.size();
        if (b > a && p.compare(a, 3, "***") != 0) lines.push_back(p.substr(a, b - a));
        a = b + 1;
      }
    *why = path + ": corrupt: PRAGMA quick_check:";
    for (std::size_t k = 0; k < lines.size() && k < 3; ++k) *why += (k ? "; " : " ") + lines[k];
    if (lines.size() > 3) *why += "; ...";
    return false;
  }
  bool ended = false;
  if (!query("SELECT status IS NOT NULL FROM run WHERE id=1", [&](const Row& r) { ended = r.i(0) != 0; }, &err)) {
    *why = err;
    return false;
  }
  held = held || trace_lock_held(path);
  state_ = ended ? TraceState::kFinished : held ? TraceState::kBeingWritten : TraceState::kUnfinished;
  return true;
}

std::string TraceDb::banner() const {
  switch (state_) {
    case TraceState::kUnfinished:
      return path_ + ": unfinished trace: no end recorded and no run writing it (the run was killed, crashed or could not "
                     "write its end); what it committed is shown, the rest of the run is missing";
    case TraceState::kBeingWritten:
      return path_ + ": being written: a run holds " + path_ + ".lock; what it committed so far is shown";
    case TraceState::kFinished: break;
  }
  return "";
}

void TraceDb::print_banner() const {
  const std::string b = banner();
  if (!b.empty()) std::fprintf(stderr, "hcsim: warning: %s\n", b.c_str());
}

bool TraceDb::require_finished(const char* command, std::string* why) const {
  switch (state_) {
    case TraceState::kUnfinished:
      *why = path_ + ": unfinished trace: no end recorded (run.status is NULL) and no run writing it: the run was killed, "
                     "crashed or could not write its end; " + command + " needs a finished run (hcsim top and hcsim trace show "
                     "what it committed)";
      return false;
    case TraceState::kBeingWritten:
      *why = path_ + ": being written: a run holds " + path_ + ".lock and has not recorded its end; " + command +
             " needs a finished run: wait for it to end";
      return false;
    case TraceState::kFinished: break;
  }
  return true;
}

bool TraceDb::has_table(const std::string& name) const {
  bool found = false;
  std::string err;
  query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [&](const Row&) { found = true; }, &err, {name});
  return found;
}

bool TraceDb::has_column(const std::string& table, const std::string& column) const {
  bool found = false;
  std::string err;
  query("SELECT 1 FROM pragma_table_info(?) WHERE name=?", [&](const Row&) { found = true; }, &err, {table, column});
  return found;
}

bool TraceDb::query(const std::string& sql, const std::function<void(const Row&)>& row, std::string* why,
                    const std::vector<std::string>& text_params) const {
  sqlite3_stmt* s = nullptr;
  if (const int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr); rc != SQLITE_OK) {
    *why = path_ + (is_corrupt_code(rc) ? ": corrupt: " : ": cannot read the trace: ") + sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return false;
  }
  for (std::size_t k = 0; k < text_params.size(); ++k)
    sqlite3_bind_text(s, static_cast<int>(k + 1), text_params[k].c_str(), -1, SQLITE_TRANSIENT);
  int rc;
  const Row r(s);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(r);
  const bool ok = rc == SQLITE_DONE;
  if (!ok) *why = path_ + (is_corrupt_code(rc) ? ": corrupt: " : ": cannot read the trace: ") + sqlite3_errmsg(db_);
  sqlite3_finalize(s);
  return ok;
}

double TraceDb::scalar(const std::string& sql, double fallback) const {
  double v = fallback;
  std::string err;
  query(sql, [&](const Row& r) { if (!r.null(0)) v = r.d(0); }, &err);
  return v;
}

bool parse_time_ns(const std::string& s, double* ns) {
  // The number grammar (sim/config/units.h): a decimal, alone (ns) or with a unit.
  std::string why, unit;
  double v = 0;
  if (auto d = sim::parse_decimal(s, &why)) v = *d;
  else if (!sim::parse_decimal_unit(s, &v, &unit, &why)) return false;
  double mul;
  if (unit.empty() || unit == "ns") mul = 1;
  else if (unit == "ps") mul = 1e-3;
  else if (unit == "us") mul = 1e3;
  else if (unit == "ms") mul = 1e6;
  else if (unit == "s") mul = 1e9;
  else return false;
  *ns = v * mul;
  return true;
}

bool parse_rank_list(const std::string& s, std::vector<std::int64_t>* ranks, std::string* why) {
  ranks->clear();
  auto num = [](const std::string& t, std::int64_t* v) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::stoll(t);
    return true;
  };
  std::size_t p = 0;
  while (p <= s.size()) {
    std::size_t c = s.find(',', p);
    if (c == std::string::npos) c = s.size();
    const std::string item = s.substr(p, c - p);
    const std::size_t dash = item.find('-');
    std::int64_t a = 0, b = 0;
    if (dash == std::string::npos ? !num(item, &a) : !(num(item.substr(0, dash), &a) && num(item.substr(dash + 1), &b))) {
      *why = "bad rank list \"" + s + "\": \"" + item + "\" is not N or N-M (e.g. 0-7,12)";
      return false;
    }
    if (dash == std::string::npos) b = a;
    if (b < a) { *why = "bad rank list \"" + s + "\": " + item + " is a descending range"; return false; }
    if (b - a > 1000000) { *why = "bad rank list \"" + s + "\": " + item + " is too large a range"; return false; }
    for (std::int64_t r = a; r <= b; ++r) ranks->push_back(r);
    p = c + 1;
  }
  std::sort(ranks->begin(), ranks->end());
  ranks->erase(std::unique(ranks->begin(), ranks->end()), ranks->end());
  return true;
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] == '0') ++ei;  // leading zeros do not count
      while (ej < b.size() && b[ej] == '0') ++ej;
      std::size_t ni = ei, nj = ej;
      while (ni < a.size() && digit(a[ni])) ++ni;
      while (nj < b.size() && digit(b[nj])) ++nj;
      if (ni - ei != nj - ej) return ni - ei < nj - ej;  // more significant digits: larger
      if (int c = a.compare(ei, ni - ei, b, ej, nj - ej)) return c < 0;
      i = ni;
      j = nj;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;
}

}  // namespace hcsim
