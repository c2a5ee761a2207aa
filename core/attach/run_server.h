// `run --serve ADDR`: exposes a live run to inspectors (`shardscope --attach`,
// `shardscope-cli attach`). One ZeroMQ ROUTER socket; each inspector says
// hello, gets the run's description, then every event from the start of the
// run (read from the run's own event logs, so a late or returning inspector
// catches up from step 0 and the server keeps nothing of its own beyond
// kSendQueue batches per inspector), the losses, where the gate stops, and at
// the end the ranks' results. Inspectors' commands (pause, step, continue,
// breakpoints, stop) go to the run's lockstep gate. A slow inspector is served
// more slowly; it never slows the run. Detaching leaves the run going.
//
// Any address but 127.0.0.1 is served with CURVE: the server's key is its
// user's identity (attach/curve_keys.h), and an inspector whose public key is
// not in authorized_keys is refused during the handshake, before any message
// of it is read; the run's log names who was refused.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config/serve_address.h"
#include "engine/run.h"

namespace shardscope {

struct ServeOptions {
  ServeAddress address;
  std::filesystem::path config_dir;  // where the CURVE keys are (empty: shardscopeConfigDir())
  // After the run: how long inspectors still receiving get to finish.
  std::chrono::milliseconds end_linger{10000};
};

class RunServer {
 public:
  static constexpr int kSendQueue = 64;         // batches in flight per inspector (ZeroMQ's send HWM)
  static constexpr size_t kBatchEvents = 4096;  // events per message (256 KiB)
  static constexpr int kMaxInspectors = 16;
  static constexpr int64_t kMaxInbound = 1 << 20;  // bytes: a bigger message drops its connection

  // Binds at once (RunError naming --serve when the address cannot be bound,
  // or the keys cannot be read). Serving starts with start().
  RunServer(Run& run, ServeOptions options);
  ~RunServer();
  RunServer(const RunServer&) = delete;
  RunServer& operator=(const RunServer&) = delete;

  std::string endpoint() const { return m_endpoint; }  // as bound (the port chosen for port 0)
  bool secured() const { return m_secured; }  // not loopback: inspectors need --server-key
  const std::string& publicKey() const { return m_publicKey; }  // the serving user's: what inspectors pass as --server-key
  size_t authorizedKeys() const { return m_authorized; }  // in authorized_keys (the user's own key is authorized besides)
  // Whether inspectors can step the run: always (a processes run's ranks
  // pass its gate through the launcher); kept in the run's description for
  // inspectors that still read it.
  bool steppable() const { return m_steppable; }

  // The inspector that stopped the run ("" if none did).
  std::string stoppedBy() const {
    std::lock_guard lock(m_stoppedByMutex);
    return m_stoppedBy;
  }

  void start();
  // Blocks until an inspector has attached (true) or `limit` passed (false).
  bool waitForInspector(std::chrono::milliseconds limit);
  // The run is over: inspectors get its results (result) or its error, then
  // Ended; returns once every attached inspector has them, or after end_linger.
  void finish(const RunResult* result, const std::string& error);

 private:
  struct Impl;
  void serve();

  Run& m_run;
  ServeOptions m_options;
  std::unique_ptr<Impl> m_impl;
  std::string m_endpoint;
  std::string m_publicKey;
  size_t m_authorized = 0;
  bool m_secured = false;
  bool m_steppable = false;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
  mutable std::mutex m_stoppedByMutex;
  std::string m_stoppedBy;
};

}  // namespace shardscope
