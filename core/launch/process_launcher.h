// `--launch processes`: the launcher's side of a run whose ranks are worker
// processes (the same binary's `worker` command), as torchrun starts them.
// It makes the run's rendezvous store (a fresh directory on this host unless
// --rdzv names one), starts one worker per rank of this node, collects what
// they stream over ZeroMQ into the Run (so the run's trace, summary and views
// are those of a threads run), forwards a stop to them, and reaps them: a
// worker that dies ends the run with one message naming its rank and signal
// or exit status, and keeps every event it sent.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "engine/run.h"

namespace shardscope {

struct LaunchOptions {
  std::string worker_program = "/proc/self/exe";  // a binary whose first argument "worker" runs runWorker
  // --launch env: this process's place on its machine as the cluster launcher
  // gave it (its GPU), for the one worker it starts; -1: by the node's ranks.
  int local_rank = -1;
  int local_size = 0;
  // What a node is called in the lines it prints: "node", or "rank" when
  // every process is one rank (--launch env).
  std::string node_word = "node";
  // --launch env: the cluster launcher ends every rank soon after a stop
  // (mpirun: SIGTERM, then SIGKILL about a quarter of a second later): node 0
  // then waits for the other ranks' last messages only briefly.
  bool brief_stop = false;
};

// The host function for Run::setRemoteRanks: node 0 (or the only node).
std::function<void(RemoteRankFeed&)> processLauncher(LaunchOptions options = {});

// Another node of a multi-node run (--node-rank > 0): starts this node's
// workers, which stream to node 0's collector (its address is in the store),
// forwards a stop to them, and tells the collector when one dies. Prints one
// line per worker; returns the exit code (0 when every worker finished).
int runOtherNode(const RunConfig& config, std::ostream& out, std::ostream& err, LaunchOptions options = {});

// Node 0's part in the end of a job whose nodes meet at --rdzv (multi-node
// and --launch env runs; a one-node run with --rdzv file:// only cleans up).
// A cluster launcher ends the whole job at the first rank that exits with an
// error (mpirun: SIGTERM, then SIGKILL), so the other nodes'
// launchers do not leave a failed run before node 0 says its outputs are
// written; node 0 then waits (briefly) for them to leave and removes the
// job's keys from a file:// store.
class JobEnd {
 public:
  explicit JobEnd(const RunConfig& config);  // does nothing unless node 0 of a --rdzv run
  ~JobEnd();                                 // written("") unless it was called
  JobEnd(const JobEnd&) = delete;
  JobEnd& operator=(const JobEnd&) = delete;
  // The outputs are written: tells the other nodes, with the run's error
  // ("" when it finished), which they print; then waits for them to leave
  // (at most a few seconds, not at all after a stop signal) and cleans the store.
  void written(const std::string& error);

 private:
  RunConfig m_config;
  bool m_active = false;
};

}  // namespace shardscope
