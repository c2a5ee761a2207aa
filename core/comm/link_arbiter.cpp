#include "comm/link_arbiter.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardscope {

int64_t LinkArbiter::takeTicket(int64_t issued_at_ns) {
  std::lock_guard lock(m_mutex);
  m_issuedAt.push_back(issued_at_ns);
  return m_nextTicket++;
}

void LinkArbiter::waitTurn(int64_t ticket) {
  std::unique_lock lock(m_mutex);
  if (ticket < m_turn || ticket >= m_nextTicket)
    throw std::logic_error("link ticket " + std::to_string(ticket) + " was never taken or is already released (turn " +
                           std::to_string(m_turn) + ", " + std::to_string(m_nextTicket) + " taken)");
  m_control.waitUntil(lock, m_cv, [&] { return m_turn == ticket; });
}

void LinkArbiter::checkTurn(int64_t ticket) const {
  if (ticket != m_turn)
    throw std::logic_error("link ticket " + std::to_string(ticket) + " used without its turn (turn is " +
                           std::to_string(m_turn) + "); call waitTurn first");
}

std::vector<LinkInterval> LinkArbiter::place(int64_t ticket, int64_t start_ns, int64_t duration_ns) {
  std::lock_guard lock(m_mutex);
  checkTurn(ticket);
  // No transfer from this ticket on can start before this one's issue time
  // (issue times never decrease), so what ended by then is history.
  const int64_t issued_at = m_issuedAt.front();
  const auto live = std::find_if(m_busy.begin(), m_busy.end(), [&](const LinkInterval& b) { return b.end > issued_at; });
  m_busy.erase(m_busy.begin(), live);

  std::vector<LinkInterval> pieces;
  int64_t t = start_ns, left = std::max<int64_t>(duration_ns, 0);
  auto it = std::upper_bound(m_busy.begin(), m_busy.end(), t,
                             [](int64_t v, const LinkInterval& b) { return v < b.end; });
  for (; it != m_busy.end() && left > 0; ++it) {
    if (it->begin > t) {  // an idle gap before this busy interval
      const int64_t take = std::min(left, it->begin - t);
      pieces.push_back({t, t + take});
      left -= take;
      t += take;
      if (left == 0) break;
    }
    t = std::max(t, it->end);
  }
  if (left > 0) pieces.push_back({t, t + left});
  return pieces;
}

void LinkArbiter::release(int64_t ticket, const std::vector<LinkInterval>& pieces) {
  {
    std::lock_guard lock(m_mutex);
    checkTurn(ticket);
    // Both lists are sorted and the pieces lie in the calendar's gaps: merge,
    // joining intervals that touch so a saturated link stays one interval.
    std::vector<LinkInterval> merged;
    merged.reserve(m_busy.size() + pieces.size());
    auto add = [&](const LinkInterval& iv) {
      if (iv.end <= iv.begin) return;
      if (!merged.empty() && merged.back().end >= iv.begin) merged.back().end = std::max(merged.back().end, iv.end);
      else merged.push_back(iv);
    };
    size_t i = 0, j = 0;
    while (i < m_busy.size() || j < pieces.size()) {
      if (j == pieces.size() || (i < m_busy.size() && m_busy[i].begin <= pieces[j].begin)) add(m_busy[i++]);
      else add(pieces[j++]);
    }
    m_busy = std::move(merged);
    m_issuedAt.pop_front();
    ++m_turn;
  }
  m_cv.notify_all();
}

std::vector<LinkInterval> LinkArbiter::busy() const {
  std::lock_guard lock(m_mutex);
  return m_busy;
}

}  // namespace shardscope
