// Read-only access to a finished hcsim trace (trace_db.h).
#include "trace_db.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hcsim {

std::int64_t Row::i(int c) const { return sqlite3_column_int64(s_, c); }
double Row::d(int c) const { return sqlite3_column_double(s_, c); }
bool Row::null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
std::string Row::s(int c) const {
  const unsigned char* t = sqlite3_column_text(s_, c);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : std::string();
}

TraceDb::~TraceDb() { sqlite3_close(db_); }

bool TraceDb::open(const std::string& path, std::string* why) {
  path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) { *why = path + ": cannot open: " + std::strerror(errno); return false; }
  if (!S_ISREG(st.st_mode)) { *why = path + ": not a regular file"; return false; }
  char head[16] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) { *why = path + ": cannot read: " + std::strerror(errno); return false; }
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n < sizeof head || std::memcmp(head, "SQLite format 3", 16) != 0) {
    *why = path + ": not an hcsim trace (not an SQLite database)";
    return false;
  }
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%') uri += "%25";
    else if (c == '?') uri += "%3f";
    else if (c == '#') uri += "%23";
    else uri += c;
  }
  uri += "?immutable=1";
  if (sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
    *why = path + ": cannot open: " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  std::string gen;
  std::string err;
  if (!has_table("meta") ||
      !query("SELECT value FROM meta WHERE key='generator'", [&](const Row& r) { gen = r.s(0); }, &err) || gen != "hcsim") {
    *why = path + ": not an hcsim trace (no meta generator=hcsim)";
    return false;
  }
  for (const char* t : {"run", "operations"})
    if (!has_table(t)) {
      *why = path + ": not an hcsim trace (no " + t + " table)";
      return false;
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
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    *why = path_ + ": cannot read the trace: " + sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return false;
  }
  for (std::size_t k = 0; k < text_params.size(); ++k)
    sqlite3_bind_text(s, static_cast<int>(k + 1), text_params[k].c_str(), -1, SQLITE_TRANSIENT);
  int rc;
  const Row r(s);
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(r);
  const bool ok = rc == SQLITE_DONE;
  if (!ok) *why = path_ + ": cannot read the trace: " + sqlite3_errmsg(db_);
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
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno || end == s.c_str() || !std::isfinite(v) || v < 0) return false;
  const std::string unit(end);
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

}  // namespace hcsim
