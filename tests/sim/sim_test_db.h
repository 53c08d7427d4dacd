// Reading a trace database in the simulation tests (docs/trace-schema.md).
#pragma once
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "sim/trace.h"

namespace sim_test {

// Rows of a query as strings (NULL as "").
inline std::vector<std::vector<std::string>> query(const std::string& db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* h = nullptr;
  if (sim::open_sqlite_readonly(db, false, &h) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db;
    sqlite3_close(h);
    return rows;
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(h);
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> r;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        r.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(r));
    }
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return rows;
}
}  // namespace sim_test
