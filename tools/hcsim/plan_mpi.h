// hcsim plan under mpirun (docs/plan-format.md#mpi), implemented in plan_mpi.cpp: MPI's start and
// end, whether each rank shares rank 0's output directory, and the hand-out that spreads the points
// over the ranks and gathers every point's rows on rank 0. Built without MPI (no HCSIM_WITH_MPI)
// only one rank ever runs: mpi_start says so and fails, the rest has nothing to do.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "plan.h"

namespace hcsim::plan {

/// Started by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE; PMIx launchers PMIX_RANK).
bool under_mpirun();

/// MPI_Init under mpirun: this process's rank and the number of ranks. False, said on rank 0's
/// stderr, when this hcsim was built without MPI.
bool mpi_start(int& rank, int& size);

/// MPI_Finalize, when mpi_start started MPI.
void mpi_finish(int size);

/// Silences stderr of MPI ranks other than 0 while they repeat rank 0's checks.
struct QuietStderr {
  int saved = -1;
  explicit QuietStderr(bool on);
  ~QuietStderr();
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;
};

/// After rank 0's `setup(true)` returned `rc` (more than one rank): every rank learns rc; each
/// other rank finds whether it shares rank 0's DIR `out` (one machine, or a network file system)
/// and runs `setup(false)` if so (only the layouts are computed), `setup(true)` if not (it writes its
/// own copy). `shared` (rank 0): 1 for each rank that shares DIR. Returns the worst result of
/// all ranks; with one rank, `rc`.
int share_dir(int rank, int size, int rc, const std::string& file, const std::string& out,
              const std::function<int(bool write)>& setup, std::vector<int>& shared);

/// Rank 0's side of the hand-out: each other rank asks for a point per free -j slot, then sends
/// every finished point's rows with its request for the next; rank 0 answers with the next point's
/// index, -1 when none is left. With one rank there is nothing to serve.
class Handout {
 public:
  Handout(int size, const std::vector<std::vector<Result>>& results);
  /// Every rank has asked for its first point. Rank 0 starts its own children only then, so that
  /// with at least as many points as ranks every rank simulates some (and a slow rank start-up
  /// does not leave it idle).
  bool all_asked() const { return asking_ == size_; }
  /// Every rank has said that it has no children left and asks for nothing more.
  bool all_done() const { return finished_ == size_; }
  /// Serves one message if one is waiting (then sets *busy): a finished point goes to `record`
  /// with the rank that ran it; a request is answered with point `order[next]` (then `next`
  /// advanced) while `next` is below `order.size()`, else -1. False (*why) on a malformed result.
  bool serve(std::size_t& next, const std::vector<std::size_t>& order, const std::function<void(const Finished&, int from)>& record,
             bool* busy, std::string* why);

 private:
  int size_;
  const std::vector<std::vector<Result>>& results_;
  std::vector<bool> asked_;
  int asking_ = 1;    // rank 0 itself
  int finished_ = 1;  // rank 0 itself
};

/// A rank other than 0: runs the points rank 0 hands it, up to `jobs` at once, sends each
/// finished point's rows back and says when it has none left. Returns kOk, or `fail(why)`.
int work_for_rank0(Children& kids, unsigned jobs, const std::function<int(const std::string&)>& fail);

/// Ends every rank (MPI_Abort) when there are several: the others wait on this one.
void abort_ranks(int size);

/// Rank 0's exit code to every rank.
void broadcast_rc(int& rc, int size);

}  // namespace hcsim::plan
