// Lockstep stepping across processes, the launcher's side: the run's one
// StepGate lives in the launcher (as in a threads run), and each worker's rank
// reports every gate point here over a ZeroMQ ROUTER socket. A point that is
// no stop is passed at once; at a stop a thread of the rank's passes the real
// gate on its behalf (blocking while stopped) and then tells it to go on.
// The last rank to reach a stop first asks the others for their ledgers as
// they are then, so a stop shows them as a threads run's views read them. The rank's events sent before the
// point are filed before it counts as stopped, and its ledger is the one it
// sent, so what the views show at a stop is what a threads run shows there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/run.h"
#include "launch/run_keys.h"

namespace shardscope {

class GateRelay {
 public:
  // Binds tcp://node_addr:* (any port) for the ranks of run `run_id`; starts
  // its threads. Only a connection with the run's client key is heard.
  GateRelay(RemoteRankFeed& feed, const std::string& node_addr, uint64_t run_id, const RunKeys& keys);
  ~GateRelay();  // lets every waiting rank go, stops the threads
  GateRelay(const GateRelay&) = delete;
  GateRelay& operator=(const GateRelay&) = delete;

  const std::string& endpoint() const { return m_endpoint; }
  // The collector filed `count` more Events records of `rank`.
  void filedEvents(int rank, size_t count) { m_filed[static_cast<size_t>(rank)] += count; }
  // The run is ending (a rank died or failed): ranks waiting at a stop are
  // let go, so the others meet the broken connections and stop on their own;
  // later points pass at once.
  void releaseAll();

 private:
  struct Pending;
  void poll();               // the socket's thread
  void rankMain(int rank);   // passes the gate for one rank

  RemoteRankFeed& m_feed;
  const uint64_t m_runId;
  std::string m_endpoint;
  std::string m_wakeEndpoint;  // inproc: rank threads to the socket's thread
  struct Sockets;
  std::unique_ptr<Sockets> m_sockets;
  std::vector<std::atomic<uint64_t>> m_filed;  // per rank: Events records the collector filed
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::vector<std::unique_ptr<Pending>> m_pending;  // per rank, under m_mutex
  std::atomic<bool> m_released{false};
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_running{0};  // rank threads not yet returned
  int m_settled = 0;               // under m_mutex: ranks settled at a stop, in pass()
  std::vector<bool> m_asked;       // under m_mutex: ranks whose ledger the last arrival awaits
  std::thread m_poller;
  std::vector<std::thread> m_ranks;
};

}  // namespace shardscope
