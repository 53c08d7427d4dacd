// hcsim plan's points spread over MPI ranks and gathered on rank 0 (docs/plan-format.md#mpi): MPI's
// start and end, the check whether a rank shares rank 0's output directory, the hand-out of points
// (rank 0 answers the other ranks' requests) and the finished points' rows sent to rank 0 as JSON.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "plan_mpi.h"

#ifdef HCSIM_WITH_MPI
#include <mpi.h>
#endif

namespace hcsim::plan {

namespace {

#ifdef HCSIM_WITH_MPI
constexpr int kTagWork = 1;   // rank k -> 0: a finished point's JSON, or "" (asking for a first point)
constexpr int kTagReply = 2;  // 0 -> rank k: the next point's index, -1 when none is left
constexpr int kTagDone = 3;   // rank k -> 0: k has no children left and asks for nothing more

std::string recv_string(int src, int tag, MPI_Status& st) {
  MPI_Probe(src, tag, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string s(static_cast<std::size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return s;
}

// A finished point on its way to rank 0, as JSON: doubles round-trip exactly; NaN as null.
json to_json(const Finished& f) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json rows = json::array();
  for (auto& r : f.rows)
    rows.push_back({r.status, r.algorithm, num(r.time_us), num(r.algbw), num(r.busbw), num(r.wall_s), num(r.peak_mib),
                    num(r.peak_util), r.peak_port, num(r.cpu_s)});
  return {{"i", f.index}, {"code", f.code}, {"rows", rows}};
}

bool from_json(const std::string& text, const std::vector<std::vector<Result>>& results, Finished& f) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("i") || !j["i"].is_number_unsigned()) return false;
  f.index = j["i"].get<std::size_t>();
  if (f.index >= results.size() || !j["rows"].is_array() || j["rows"].size() != results[f.index].size()) return false;
  f.code = j.value("code", int(kBadInput));
  f.rows = results[f.index];
  auto num = [](const json& v) { return v.is_number() ? v.get<double>() : NAN; };
  for (std::size_t k = 0; k < f.rows.size(); ++k) {
    const json& r = j["rows"][k];
    if (!r.is_array() || r.size() != 10 || !r[0].is_string() || !r[1].is_string() || !r[8].is_string()) return false;
    Result& o = f.rows[k];
    o.status = r[0].get<std::string>();
    o.algorithm = r[1].get<std::string>();
    o.time_us = num(r[2]);
    o.algbw = num(r[3]);
    o.busbw = num(r[4]);
    o.wall_s = num(r[5]);
    o.peak_mib = num(r[6]);
    o.peak_util = num(r[7]);
    o.peak_port = r[8].get<std::string>();
    o.cpu_s = num(r[9]);
  }
  return true;
}
#endif

}  // namespace

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

bool mpi_start(int& rank, int& size) {
#ifdef HCSIM_WITH_MPI
  // Open MPI 4 warns about fork() only with its openib/verbs transport; the children exec at once.
  setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return true;
#else
  (void)rank;
  (void)size;
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!r || std::string(r) == "0")
    std::fprintf(stderr, "hcsim plan: started by mpirun, but this hcsim was built without MPI (CMake's find_package(MPI) "
                         "found none; install libopenmpi-dev and rebuild, docs/plan-format.md#mpi)\n");
  return false;
#endif
}

void mpi_finish(int size) {
#ifdef HCSIM_WITH_MPI
  if (size > 1 || under_mpirun()) MPI_Finalize();
#else
  (void)size;
#endif
}

QuietStderr::QuietStderr(bool on) {
  if (!on) return;
  std::fflush(stderr);
  saved = dup(2);
  const int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) { dup2(fd, 2); close(fd); }
}

QuietStderr::~QuietStderr() {
  if (saved < 0) return;
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
}

int share_dir(int rank, int size, int rc, const std::string& file, const std::string& out,
              const std::function<int(bool write)>& setup, std::vector<int>& shared) {
  if (size <= 1) return rc;
#ifdef HCSIM_WITH_MPI
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != kOk) return rc;
  // Is DIR shared with rank 0 (one machine, or a network file system)? Rank 0 writes a token
  // there; a rank that cannot read it back writes its own copy of the layouts and scenarios.
  char token[64] = {0};
  const std::string probe = out.empty() ? std::string() : out + "/.hcsim-plan-mpi";
  if (rank == 0) {
    std::snprintf(token, sizeof token, "%ld.%ld", static_cast<long>(getpid()),
                  static_cast<long>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::string why;
    if (!write_file(probe, std::string(token) + "\n", &why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      token[0] = 0;  // every rank stops: without the token no rank can tell whether it shares DIR
    }
  }
  MPI_Bcast(token, sizeof token, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (!token[0]) return kBadInput;
  int mine = 1;
  if (rank != 0) {
    std::string o = out;
    {
      QuietStderr quiet(true);  // the plan loaded on rank 0; its DIR name is needed here
      Plan q;
      sim::Diagnostics d(file);
      if (o.empty() && load_plan(file, q, d)) o = q.name + ".plan";
    }
    std::ifstream f(o + "/.hcsim-plan-mpi");
    std::string line;
    mine = std::getline(f, line) && line == token;
    if (mine) {
      QuietStderr quiet(true);
      rc = setup(false);
    } else {
      rc = setup(true);
      if (rc != kOk) std::fprintf(stderr, "hcsim plan: MPI rank %d: the checks above failed on this machine\n", rank);
    }
  }
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Gather(&mine, 1, MPI_INT, shared.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) std::remove((out + "/.hcsim-plan-mpi").c_str());
  return worst;
#else
  (void)rank, (void)file, (void)out, (void)setup, (void)shared;
  return rc;
#endif
}

Handout::Handout(int size, const std::vector<std::vector<Result>>& results)
    : size_(size), results_(results), asked_(static_cast<std::size_t>(size), false) {}

bool Handout::serve(std::size_t& next, const std::vector<std::size_t>& order,
                    const std::function<void(const Finished&, int from)>& record, bool* busy, std::string* why) {
#ifdef HCSIM_WITH_MPI
  if (size_ <= 1) return true;
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return true;
  *busy = true;
  const std::string msg = recv_string(st.MPI_SOURCE, st.MPI_TAG, st);
  if (st.MPI_TAG == kTagDone) {
    ++finished_;
    return true;
  }
  if (!asked_[static_cast<std::size_t>(st.MPI_SOURCE)]) {
    asked_[static_cast<std::size_t>(st.MPI_SOURCE)] = true;
    ++asking_;
  }
  if (!msg.empty()) {
    Finished f;
    if (!from_json(msg, results_, f)) {
      *why = "a malformed result from rank " + std::to_string(st.MPI_SOURCE);
      return false;
    }
    record(f, st.MPI_SOURCE);
  }
  long idx = next < order.size() ? static_cast<long>(order[next++]) : -1;
  MPI_Send(&idx, 1, MPI_LONG, st.MPI_SOURCE, kTagReply, MPI_COMM_WORLD);
#else
  (void)next, (void)order, (void)record, (void)busy, (void)why;
#endif
  return true;
}

int work_for_rank0(Children& kids, unsigned jobs, const std::function<int(const std::string&)>& fail) {
#ifdef HCSIM_WITH_MPI
  std::string why;
  // One request per free slot, then every finished point's rows ask for the next.
  auto ask = [&](const std::string& msg) {
    MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagWork, MPI_COMM_WORLD);
    long idx = -1;
    MPI_Recv(&idx, 1, MPI_LONG, 0, kTagReply, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return idx;
  };
  bool more = true;
  for (unsigned s = 0; s < jobs && more; ++s) {
    const long i = ask("");
    if (i < 0) more = false;
    else if (!kids.spawn(static_cast<std::size_t>(i), &why)) return fail(why);
  }
  while (kids.running() > 0) {
    Finished f;
    if (!kids.reap(true, f, &why)) return fail(why);
    const long i = ask(to_json(f).dump());
    if (i >= 0 && !kids.spawn(static_cast<std::size_t>(i), &why)) return fail(why);
  }
  MPI_Send(nullptr, 0, MPI_CHAR, 0, kTagDone, MPI_COMM_WORLD);
#else
  (void)kids, (void)jobs, (void)fail;
#endif
  return kOk;
}

void abort_ranks(int size) {
#ifdef HCSIM_WITH_MPI
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, kBadInput);
#else
  (void)size;
#endif
}

void broadcast_rc(int& rc, int size) {
#ifdef HCSIM_WITH_MPI
  if (size > 1) MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#else
  (void)rc, (void)size;
#endif
}

}  // namespace hcsim::plan
