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
};

// The host function for Run::setRemoteRanks: node 0 (or the only node).
std::function<void(RemoteRankFeed&)> processLauncher(LaunchOptions options = {});

// Another node of a multi-node run (--node-rank > 0): starts this node's
// workers, which stream to node 0's collector (its address is in the store),
// forwards a stop to them, and tells the collector when one dies. Prints one
// line per worker; returns the exit code (0 when every worker finished).
int runOtherNode(const RunConfig& config, std::ostream& out, std::ostream& err, LaunchOptions options = {});

}  // namespace shardscope
