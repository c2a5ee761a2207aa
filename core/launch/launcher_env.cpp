#include "launch/launcher_env.h"

#include <charconv>
#include <cstdlib>
#include <vector>

#include "common/errors.h"

namespace shardscope {

namespace {

// A launcher's variables: rank and size (required together; size may be
// absent for PMIx), local rank and local size (optional), the job id.
struct Family {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
  std::vector<const char*> job;  // joined with '.' when all are set
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", {"TORCHELASTIC_RUN_ID"}},
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE", {"PMIX_NAMESPACE"}},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr,
       {"SLURM_JOB_ID", "SLURM_STEP_ID"}},
      {"PMI", "PMI_RANK", "PMI_SIZE", nullptr, nullptr, {}},
      {"PMIx", "PMIX_RANK", nullptr, nullptr, nullptr, {"PMIX_NAMESPACE"}},
  };
  return f;
}

// A count or index the launcher set: a decimal integer in [0, 2^31).
int number(const char* name, const std::string& v) {
  int n = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < 0)
    throw ConfigError("--launch env: " + std::string(name) + "='" + v + "' is not a whole number");
  return n;
}

struct Read {
  const Family* family = nullptr;
  std::optional<int> rank, size, local_rank, local_size;
  std::string variables;
};

Read read(const Family& f, const EnvLookup& env) {
  Read r;
  r.family = &f;
  const auto get = [&](const char* name, std::optional<int>& into) {
    if (!name) return;
    if (const std::optional<std::string> v = env(name)) {
      into = number(name, *v);
      r.variables += (r.variables.empty() ? "" : " ") + std::string(name) + "=" + *v;
    }
  };
  get(f.rank, r.rank);
  get(f.size, r.size);
  get(f.local_rank, r.local_rank);
  get(f.local_size, r.local_size);
  return r;
}

bool present(const Read& r) { return r.rank || r.size; }

}  // namespace

EnvLookup processEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

LauncherEnv detectLauncherEnv(const EnvLookup& env, std::optional<int> ranks_flag) {
  std::vector<Read> found;
  for (const Family& f : families())
    if (Read r = read(f, env); present(r)) found.push_back(std::move(r));
  if (found.empty())
    throw ConfigError(
        "--launch env: no launcher's variables are set (torchrun: RANK and WORLD_SIZE; Open MPI: "
        "OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE; Slurm: SLURM_PROCID and SLURM_NTASKS; PMI: PMI_RANK and "
        "PMI_SIZE; PMIx: PMIX_RANK): start this command with torchrun, mpirun or srun, or use --launch processes");
  const Read& r = found.front();
  const Family& f = *r.family;
  const std::string who = "--launch env (" + std::string(f.name) + ")";
  if (!r.rank) throw ConfigError(who + ": " + f.size + " is set but " + f.rank + " is not");
  LauncherEnv e;
  e.launcher = f.name;
  e.variables = r.variables;
  e.rank = *r.rank;
  if (r.size) {
    e.world = *r.size;
  } else if (f.size) {
    throw ConfigError(who + ": " + f.rank + " is set but " + f.size + " is not");
  } else if (ranks_flag) {
    e.world = *ranks_flag;  // PMIx names no world size
  } else {
    throw ConfigError(who + ": " + f.rank + " gives no world size: give --ranks");
  }
  if (e.world < 1) throw ConfigError(who + ": the world size " + std::string(f.size ? f.size : "--ranks") + " must be at least 1");
  if (e.rank >= e.world)
    throw ConfigError(who + ": " + f.rank + "=" + std::to_string(e.rank) + " must be below the world size " +
                      std::to_string(e.world));
  if (ranks_flag && *ranks_flag != e.world)
    throw ConfigError(who + ": --ranks " + std::to_string(*ranks_flag) + " contradicts " +
                      (f.size ? std::string(f.size) : std::string("the world size")) + "=" + std::to_string(e.world) +
                      " (leave --ranks out: the launcher sets the world size)");
  if (f.local_size && r.local_rank.has_value() != r.local_size.has_value())
    throw ConfigError(who + ": " + (r.local_rank ? f.local_rank : f.local_size) + " is set but " +
                      (r.local_rank ? f.local_size : f.local_rank) + " is not");
  std::optional<int> local_size = r.local_size;
  // Slurm's tasks per node is a list ("2(x3),1") unless every node has the
  // same count: only a plain number places a rank's GPU.
  if (std::string(f.name) == "Slurm")
    if (const std::optional<std::string> v = env("SLURM_NTASKS_PER_NODE");
        v && !v->empty() && v->find_first_not_of("0123456789") == std::string::npos)
      local_size = number("SLURM_NTASKS_PER_NODE", *v);
  if (r.local_rank) {
    e.local_rank = *r.local_rank;
    e.local_world = local_size.value_or(0);
    if (e.local_world > 0 && (e.local_rank >= e.local_world || e.local_world > e.world))
      throw ConfigError(who + ": local rank " + std::to_string(e.local_rank) + " of " + std::to_string(e.local_world) +
                        " per node does not fit a world of " + std::to_string(e.world));
    if (e.local_rank > e.rank)
      throw ConfigError(who + ": local rank " + std::to_string(e.local_rank) + " is above the rank " +
                        std::to_string(e.rank));
  }
  // Another launcher's variables describing the same world must agree; one
  // describing another world (the Slurm allocation around an mpirun) is the
  // outer launcher's and is left alone.
  for (size_t i = 1; i < found.size(); ++i) {
    const Read& o = found[i];
    if (!o.size || *o.size != e.world || !o.rank || *o.rank == e.rank) continue;
    throw ConfigError("--launch env: " + std::string(f.name) + " and " + o.family->name +
                      " contradict each other for a world of " + std::to_string(e.world) + ": " + r.variables +
                      " but " + o.variables);
  }
  std::string job;
  for (const char* name : f.job) {
    const std::optional<std::string> v = env(name);
    if (!v || v->empty()) {
      job.clear();
      break;
    }
    job += (job.empty() ? "" : ".") + *v;
  }
  for (char& c : job)
    if (c == '/' || c == ' ' || c == '\t' || c == '\n') c = '_';
  if (job.size() <= 128) e.job_id = job;
  return e;
}

void placeLauncherRank(RunConfig& config, const LauncherEnv& env, bool rdzv_id_given) {
  config.ranks = env.world;
  config.launch = Launch::Processes;
  config.nnodes = env.world;
  config.nproc_per_node = 1;
  config.node_rank = env.rank;
  if (!rdzv_id_given && !env.job_id.empty()) config.rdzv_id = "job-" + env.job_id;
  if (env.rank > 0) {
    // Rank 0 writes and serves the run; every rank is given the same flags.
    config.trace_path.clear();
    config.summary_path.clear();
    config.flight_recorder_dir.clear();
    config.serve.clear();
    config.serve_wait_s = 0;
  }
}

std::string launcherEnvText(const LauncherEnv& env) {
  std::string s = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world) + ", started by " +
                  env.launcher + " (" + env.variables + ")";
  return s;
}

}  // namespace shardscope
