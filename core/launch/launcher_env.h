// `--launch env`: this process is one rank of a job that a cluster launcher
// started (torchrun, Open MPI's mpirun, Slurm's srun, a PMI/PMIx launcher),
// one process per rank. Its place (rank, world size, local rank) is read from
// the variables that launcher sets; the ranks then meet through --rdzv as the
// nodes of a `--launch processes` run do, each process a node of one rank.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "config/run_config.h"

namespace shardscope {

struct LauncherEnv {
  std::string launcher;  // "torchrun", "Open MPI", "Slurm", "PMI", "PMIx"
  int rank = 0;
  int world = 0;
  int local_rank = -1;  // -1: the launcher does not say
  int local_world = 0;
  std::string variables;  // what was read, "OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=4 …"
  std::string job_id;     // the launcher's job id when it sets one (a default --rdzv-id)
};

// A variable's value, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup processEnvironment();

// Reads the first launcher found, innermost first (torchrun, Open MPI,
// Slurm, PMI, PMIx: torchrun or mpirun started inside a Slurm allocation
// still sees the allocation's SLURM_* variables). `ranks_flag` is --ranks
// when given: PMIx names no world size, and any other must agree with it.
// Throws ConfigError when no launcher's variables are set, when one sets
// them partly, or when they contradict each other or --ranks.
LauncherEnv detectLauncherEnv(const EnvLookup& env, std::optional<int> ranks_flag);

// The run as this rank takes part in it: the world size as --ranks, this
// process as node `rank` of `world` nodes of one rank each, the job id as
// --rdzv-id unless one was given. Rank 0 collects the run (trace, summary,
// --serve); the others leave those outputs to it.
void placeLauncherRank(RunConfig& config, const LauncherEnv& env, bool rdzv_id_given);

// One line for the terminal: "rank 2 of 4, started by Open MPI (OMPI_COMM_WORLD_RANK=2 …)".
std::string launcherEnvText(const LauncherEnv& env);

}  // namespace shardscope
