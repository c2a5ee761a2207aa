// A rendezvous store whose waits end when the rank is asked to stop. Gloo's
// connect waits in the store for every peer's address; a worker process whose
// peer died before publishing it would sit there until the connect timeout,
// deaf to the launcher's SIGTERM (the run's cancel cannot reach into Gloo),
// and be killed 3 s later instead of stopping at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace shardscope {

class StoppableStore : public gloo::rendezvous::Store {
 public:
  StoppableStore(std::shared_ptr<gloo::rendezvous::Store> inner, std::shared_ptr<const std::atomic<bool>> stopped);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // waits as wait() does, then reads
  void wait(const std::vector<std::string>& keys) override;
  // Waits in slices, checking the stop between them; throws gloo::IoException
  // "stopped while waiting for …" once stopped, and the inner store's timeout
  // error at the deadline.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<gloo::rendezvous::Store> m_inner;
  std::shared_ptr<const std::atomic<bool>> m_stopped;
};

}  // namespace shardscope
