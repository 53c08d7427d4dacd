// hcsim plan: capacity planning sweeps (docs/plan-format.md, docs/architecture.md#tools). A plan
// names a base topology, parameters to sweep (JSON pointers into it) and workloads; every layout
// of the sweep's cartesian product is written out, validated in this process, then each (layout,
// workload) point is simulated by a child `hcsim run` (up to -j at once, one simulation per
// process as SystemC requires; plan_children.cpp) and its trace read back into one table, CSV,
// SQLite database and SVG plots (plan_report.cpp), with the cheapest layout that meets the plan's
// target. Under mpirun the points are spread over the ranks (plan_mpi.cpp).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "plan.h"
#include "plan_mpi.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"
#include "sim/provenance.h"

namespace hcsim {
namespace {

using namespace plan;

// No file the plan writes in DIR (nor DIR itself) may be the plan file, its topology or the
// topology's rank table, nor two of them one file (docs/tools.md#outputs). Whether DIR may be
// written into is the marker's rule below.
std::string check_plan_outputs(const Plan& p, const std::string& out) {
  std::vector<InputFile> inputs = {{"input PLAN", p.file}, {"the plan's topology", p.topology_path}};
  if (p.base.is_object() && p.base.contains("rank_table") && p.base["rank_table"].is_string()) {
    const std::string rt = p.base["rank_table"].get<std::string>();
    inputs.push_back({"the topology's rank table", !rt.empty() && rt[0] == '/' ? rt : dir_of(p.topology_path) + rt});
  }
  std::size_t layouts = 1;
  for (const auto& s : p.sweeps) layouts *= s.values.size();  // at most kMaxPoints (load_plan)
  const std::string d = out + "/";
  std::vector<OutputFile> outs = {{"-o", out, {}, ""}};
  auto add = [&](const std::string& name) { outs.push_back({"-o", d + name, {}, ""}); };
  for (const char* f : {kMarker, ".hcsim-plan-mpi", "plan.csv", "plan.db", "plan.db-journal", "busbw.svg", "time-vs-servers.svg", "cost.svg",
                        "tier_check.csv"})
    add(f);
  for (std::size_t li = 0; li < layouts; ++li) {
    add("layout" + std::to_string(li) + ".topology.json");
    for (std::size_t wi = 0; wi < p.workloads.size(); ++wi)
      for (std::size_t vi = 0; vi < p.variants().size(); ++vi) {
        const std::string stem = point_stem(p, li, wi, vi);
        for (const char* tier : {"", ".chunk", ".packet"})  // the sweep's run, --tier-check's finer ones
          for (const char* ext : {".scenario.json", ".log", ".hcsim.db", ".hcsim.db.lock", ".hcsim.db-journal", ".done"})
            add(stem + tier + ext);
      }
  }
  return check_outputs(inputs, outs, false);
}

// Load the plan, make DIR and write every layout's topology and every point's scenario into it,
// validating them; `write` false (an MPI rank that shares rank 0's DIR) only computes the layouts.
int setup(const std::string& file, std::string& out, bool force, bool write, Plan& p, std::vector<Layout>& layouts,
          std::vector<Point>& points, std::vector<std::vector<Result>>& results) {
  sim::Diagnostics d(file);
  if (!load_plan(file, p, d)) {
    for (auto& m : d.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return kBadInput;
  }
  if (write)
    for (auto& m : d.warnings()) std::fprintf(stderr, "%s\n", m.c_str());
  if (out.empty()) out = p.name + ".plan";
  std::string why;
  if (write) {
    if (const std::string bad = check_plan_outputs(p, out); !bad.empty()) {
      std::fprintf(stderr, "hcsim: %s\n", bad.c_str());
      return kBadInput;
    }
    // The output directory: created, or one an earlier plan made (its marker file), or --force.
    struct stat st {};
    if (stat(out.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) { std::fprintf(stderr, "hcsim: %s: exists and is not a directory\n", out.c_str()); return kBadInput; }
      if (access((out + "/" + kMarker).c_str(), F_OK) != 0 && !force) {
        std::fprintf(stderr, "hcsim: %s: exists and was not made by hcsim plan (no %s in it); use --force to write into it\n",
                     out.c_str(), kMarker);
        return kBadInput;
      }
    } else if (mkdir(out.c_str(), 0777) != 0) {
      std::fprintf(stderr, "hcsim: %s: cannot create: %s\n", out.c_str(), std::strerror(errno));
      return kBadInput;
    }
    if (!write_file(out + "/" + kMarker, "hcsim plan " + absolute(file) + "\n", &why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      return kBadInput;
    }
  }

  // Layouts (the cartesian product of the sweeps, the first outermost) and points, checked.
  points.clear();
  results.clear();
  if (!build_points(p, out, write, layouts, points, results)) return kBadInput;
  return kOk;
}

// The whole plan on one rank of `size` (1 without MPI): rank 0 checks the plan, writes DIR, hands
// out points (its own -j children first come, first served with the other ranks' requests), gathers
// every point's rows and alone writes the reports; docs/plan-format.md#mpi.
int plan_ranks(const std::vector<std::string>& argv, int rank, int size) {
  std::string file, out;
  unsigned jobs = 1;
  std::size_t tier_check = 0;  // --tier-check K (0: none)
  bool force = false, dry = false, inherit_env = false, tier_check_given = false, resume = false;
  const Args args(
      kPlan,
      {{"-j", "--jobs", "N", "a number", "simulate up to N points at once, one process each (default 1; per MPI rank)",
        [&](const std::string& v) {
          std::string why;
          const auto n = sim::parse_uint(v, &why);
          if (!n || *n < 1 || *n > 256) return std::string("-j needs a number from 1 to 256, got \"" + v + "\"");
          jobs = static_cast<unsigned>(*n);
          return std::string();
        }},
       {"-o", "", "DIR", "a directory", "write layouts, scenarios, traces and results to DIR (default ./NAME.plan)",
        [&](const std::string& v) { out = v; return v.empty() ? std::string("-o needs a directory") : std::string(); }},
       {"--force", "", "", "", "use an existing DIR that an earlier hcsim plan did not create",
        [&](const std::string&) { force = true; return std::string(); }},
       {"--dry-run", "-n", "", "", "validate and list the points without simulating them",
        [&](const std::string&) { dry = true; return std::string(); }},
       {"--tier-check", "", "K", "a number",
        "then re-run each layout's K points with the busiest switch port in the next finer tier and report the spread",
        [&](const std::string& v) {
          std::string why;
          const auto n = sim::parse_uint(v, &why);
          if (!n || *n > 1000)
            return std::string("--tier-check needs a number of points per layout from 0 to 1000, got \"" + v + "\"");
          tier_check = static_cast<std::size_t>(*n);
          tier_check_given = true;
          return std::string();
        }},
       {"--resume", "", "", "", "keep the points an earlier run of this plan into DIR finished whose scenario, topology and hcsim are unchanged",
        [&](const std::string&) { resume = true; return std::string(); }},
       {"--inherit-env", "", "", "", "the points' runs read this shell's HCOMM_*/HCCL_* variables (default: ignored; the plan's hcomm_env wins)",
        [&](const std::string&) { inherit_env = true; return std::string(); }}},
      {"PLAN", "the plan file (docs/plan-format.md)", [&](const std::string& a) {
         if (!file.empty()) return std::string("plan takes one plan file, got a second: ") + a;
         file = a;
         return std::string();
       }});
  {
    // Every rank parses the same arguments the same way; only rank 0 says what is wrong.
    QuietStderr quiet(rank != 0);
    if (auto rc = args.parse(argv)) return *rc;
    if (file.empty()) return args.usage_error("plan needs a plan file");
    // The points' runs are hermetic: the caller's HCOMM_*/HCCL_* are removed here, so the
    // children never see them, unless --inherit-env (then checked here, and passed on).
    sim::CallerEnv env;
    std::string why;
    if (!sim::take_caller_env(inherit_env, &env, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
    if (const std::string note = sim::env_ignored_note(env); !note.empty()) std::fprintf(stderr, "hcsim plan: %s\n", note.c_str());
  }

  Plan p;
  std::vector<Layout> layouts;
  std::vector<Point> points;  // (layout, workload, seed run), each a child `hcsim run`
  std::vector<std::vector<Result>> results;
  int rc = rank == 0 ? setup(file, out, force, true, p, layouts, points, results) : kOk;
  std::vector<int> shared(static_cast<std::size_t>(size), 1);  // rank k reads rank 0's DIR
  rc = share_dir(rank, size, rc, file, out, [&](bool write) { return setup(file, out, force, write, p, layouts, points, results); },
                 shared);
  if (rc != kOk) return rc;
  p.inherit_env = inherit_env;
  if (rank == 0) {
    std::string ranks;
    if (size > 1) {
      ranks = ", " + std::to_string(size) + " MPI ranks";
      const auto n = std::count(shared.begin(), shared.end(), 1);
      if (n != size) ranks += " (" + std::to_string(size - n) + " with their own copy of DIR)";
    }
    std::size_t infeasible = 0;
    for (auto& rs : results)
      for (auto& r : rs) infeasible += r.step < 0;
    const std::size_t nv = p.variants().size();
    std::fprintf(stderr, "hcsim plan: %s: %zu layouts x %zu workloads%s = %zu runs, -j %u%s, results in %s/\n", file.c_str(),
                 layouts.size(), p.workloads.size(), nv > 1 ? (" x " + std::to_string(nv) + " seed runs").c_str() : "", points.size(), jobs,
                 ranks.c_str(), out.c_str());
    if (infeasible)
      std::fprintf(stderr, "hcsim plan: %zu of the plan's rows are infeasible (the table says why); the others run\n", infeasible);
  }
  // Hand-out order, longest first (what -j and MPI ranks start first; the results and the
  // table keep the (layout, workload) order): a point's simulation work is estimated from the
  // events its operations make per rank — an all-to-all's grow with the ranks (every rank
  // writes to every other server: ranks^2 in all), the other collectives' with log2(ranks) steps
  // — times the sizes' count, plus a share for their bytes (the large ones move more chunks).
  std::vector<double> est(points.size(), 0.0), est_mib(points.size(), 0.0);
  std::vector<std::size_t> order;  // the points to run: feasible, not kept by --resume
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Estimate e = estimate(p, layouts[points[i].layout], p.workloads[points[i].workload], results[i]);
    est[i] = e.wall_s;
    est_mib[i] = e.peak_mib;
    for (auto& r : results[i])
      if (r.step >= 0) {
        r.est_wall_s = e.wall_s;
        r.est_peak_mib = e.peak_mib;
      }
    if (runnable(results[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return est[a] > est[b]; });
  if (resume && rank == 0 && !dry) {
    Children probe(p, points, results);
    std::vector<std::size_t> left;
    std::size_t kept = 0;
    for (std::size_t i : order) {
      Finished f;
      if (probe.resume(i, f)) {
        results[i] = f.rows;
        if (f.code != kOk) rc = std::max(rc, f.code);
        ++kept;
      } else {
        left.push_back(i);
      }
    }
    std::fprintf(stderr, "hcsim plan: --resume: %zu of %zu points kept from the earlier run, %zu to run\n", kept, order.size(), left.size());
    order = std::move(left);
  }
  std::vector<std::size_t> by_rank(static_cast<std::size_t>(size), 0);
  if (!dry) {
    Children kids(p, points, results);
    std::string why;
    if (!kids.find_self(&why)) {
      std::fprintf(stderr, "hcsim: %s\n", why.c_str());
      abort_ranks(size);
      return kBadInput;
    }
    auto fail = [&](const std::string& what) {
      std::fprintf(stderr, "hcsim plan: MPI rank %d: %s\n", rank, what.c_str());
      abort_ranks(size);  // the other ranks wait on this one
      return int(kBadInput);
    };
    if (rank == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      std::size_t next = 0, done = 0;
      double est_done = 0, est_all = 0;  // estimated work: finished points, all points (the ETA)
      for (std::size_t i : order) est_all += est[i];
      Handout handout(size, results);
      MemoryGate mem(est_mib, available_mib());
      auto record = [&](const Finished& f, int from) {
        if (from == 0) mem.finished(f.index);
        results[f.index] = f.rows;
        if (f.code != kOk) rc = std::max(rc, f.code);
        ++done;
        ++by_rank[static_cast<std::size_t>(from)];
        const Point& pt = points[f.index];
        const Result& r0 = *std::find_if(f.rows.begin(), f.rows.end(), [](const Result& r) { return r.step >= 0; });
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // ETA: the estimated work left at the rate the finished points' estimated work took
        // (longest first, a count of points would overstate it early and understate it late).
        est_done += est[f.index];
        const double eta = est_done > 0 ? el / est_done * (est_all - est_done) : 0;
        std::fprintf(stderr, "hcsim plan: [%zu/%zu] %slayout %zu (%s) %s: %s, %.1f s, %.0f MiB; elapsed %.0f s, ETA %.0f s\n", done,
                     order.size(), size > 1 ? ("rank " + std::to_string(from) + ": ").c_str() : "", pt.layout,
                     layouts[pt.layout].label.c_str(), p.workloads[pt.workload].op.c_str(), r0.status.c_str(), r0.wall_s,
                     r0.peak_mib, el, eta);
      };
      while (done < order.size() || !handout.all_done()) {
        bool busy = false;
        while (handout.all_asked() && kids.running() < jobs && next < order.size() && mem.admits(order[next])) {
          mem.started(order[next]);
          if (!kids.spawn(order[next++], &why)) return fail(why);
          busy = true;
        }
        if (!handout.serve(next, order, record, &busy, &why)) return fail(why);
        Finished f;
        if (kids.running() > 0 && kids.reap(size == 1, f, &why)) {
          record(f, 0);
          busy = true;
        } else if (!why.empty()) {
          return fail(why);
        }
        if (!busy) usleep(2000);
      }
    } else if (const int wrc = work_for_rank0(kids, jobs, fail); wrc != kOk) {
      return wrc;
    }
  }

  if (rank == 0) {
    std::vector<std::pair<std::string, std::string>> meta;
    if (size > 1) {
      std::string counts;
      for (auto n : by_rank) counts += (counts.empty() ? "" : ",") + std::to_string(n);
      meta = {{"mpi_ranks", std::to_string(size)}, {"points_by_rank", counts}};
    }
    // --tier-check: rank 0 re-runs the picked points with its own -j children once the sweep is
    // done (the other ranks wait for the exit status).
    std::vector<TierCheck> checks;
    const bool check = tier_check_given && tier_check > 0 && !dry;
    if (check) {
      checks = pick_tier_checks(p, points, results, tier_check);
      rc = std::max(rc, run_tier_checks(p, layouts, points, results, out, jobs, checks));
    } else {
      std::remove((out + "/tier_check.csv").c_str());  // an earlier run's would be stale
      if (tier_check_given && dry) std::fprintf(stderr, "hcsim plan: --dry-run: no tier check\n");
    }
    rc = report(p, layouts, points, results, out, dry, rc, meta, check ? &checks : nullptr);
  }
  broadcast_rc(rc, size);
  return rc;
}

int plan_main(const std::vector<std::string>& argv) {
  int rank = 0, size = 1;
  if (under_mpirun() && !mpi_start(rank, size)) return kBadInput;
  const int rc = plan_ranks(argv, rank, size);
  mpi_finish(size);
  return rc;
}

}  // namespace

const Command kPlan{"plan", "plan PLAN [-j N] [-o DIR] [--force] [--dry-run] [--resume] [--tier-check K] [--inherit-env]",
                    "        Capacity planning: simulate every layout of a sweep (JSON pointers into a base\n"
                    "        topology) with every workload, one `hcsim run` process per point; table on stdout,\n"
                    "        DIR/plan.csv, DIR/plan.db, SVG plots, the cheapest layout meeting the targets;\n"
                    "        what-if faults and seeds as dimensions, infeasible cells, --resume;\n"
                    "        --tier-check K: each layout's K busiest points again in the next finer tier\n",
                    plan_main};

}  // namespace hcsim
