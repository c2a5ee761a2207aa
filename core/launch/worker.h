// A worker process of a `--launch processes` run: it hosts one rank, meets
// the other ranks through the rendezvous store, trains, and streams what the
// rank records (events, losses, then its result) to the run's collector.
// When the run's gate is on, the rank passes it in the launcher: each gate
// point waits there for a go (launch/gate_relay.h).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

struct WorkerArgs {
  int rank = -1;
  std::string collector;    // ZeroMQ endpoint of the collector: "tcp://127.0.0.1:40123"
  std::string gate;         // the launcher's gate relay (the run's gate is on), else empty
  std::string keys_file;    // the run's CURVE keys (launch/run_keys.h): a 0600 file in a 0700 directory
  uint64_t run_id = 0;
  std::string rdzv;         // file://DIR or redis://HOST:PORT
  std::string prefix;       // this run's keys in the store
  std::string node_addr = "127.0.0.1";  // where the other ranks reach this one
  std::optional<int64_t> clock_origin_ns;  // the launcher's steady-clock origin (same host)
  int launcher_pid = 0;     // ends with its launcher: a worker never outlives it
  int local_rank = -1;      // its index among its node's ranks (torchrun's LOCAL_RANK): its GPU
  int local_size = 0;       // ranks its node starts (LOCAL_WORLD_SIZE)
  int connect_timeout_ms = 300000;  // every rank must connect within this (--rdzv-timeout)
};

// `shardscope-cli worker` arguments: the worker flags, "--", then the run's
// flags (runArgs of its config). Throws ConfigError naming the flag.
WorkerArgs parseWorkerArgs(const std::vector<std::string>& args, RunConfig* config);
std::vector<std::string> workerArgs(const WorkerArgs& worker, const RunConfig& config);

// Runs the worker; returns its exit code (0, kExitRunFailed, 128 + signal).
int runWorker(const RunConfig& config, const WorkerArgs& args, std::ostream& err);

}  // namespace shardscope
