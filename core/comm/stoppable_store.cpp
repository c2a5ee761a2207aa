#include "comm/stoppable_store.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <thread>

#include "comm/rendezvous_store.h"

namespace shardscope {

namespace {
// How often a waiting rank looks at its stop: well inside the launcher's
// 250 ms between a death and its SIGTERM to the others.
constexpr std::chrono::milliseconds kSlice{50};
}  // namespace

StoppableStore::StoppableStore(std::shared_ptr<gloo::rendezvous::Store> inner,
                               std::shared_ptr<const std::atomic<bool>> stopped)
    : m_inner(std::move(inner)), m_stopped(std::move(stopped)) {}

void StoppableStore::set(const std::string& key, const std::vector<char>& data) { m_inner->set(key, data); }

std::vector<char> StoppableStore::get(const std::string& key) {
  wait({key});
  return m_inner->get(key);
}

void StoppableStore::wait(const std::vector<std::string>& keys) { wait(keys, kDefaultTimeout); }

void StoppableStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  // The keys are looked at without the inner store's wait: Gloo's FileStore
  // counts a wait's timeout in whole seconds, so a 50 ms slice of it took a
  // second and a stop was heard that late.
  while (!rendezvousStoreHas(*m_inner, keys)) {
    if (m_stopped->load()) {
      std::string names;
      for (const std::string& k : keys) names += (names.empty() ? "" : ", ") + k;
      throw gloo::IoException("stopped while waiting for the rendezvous key(s) " + names);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      m_inner->wait(keys, std::chrono::milliseconds(1));  // throws the inner store's own timeout message
      return;
    }
    std::this_thread::sleep_for(std::min(kSlice, left));
  }
}

}  // namespace shardscope
