#include "memory/memory_ledger.h"

#include <algorithm>

namespace shardscope {

bool isModelState(Category c) {
  return c == Category::Param || c == Category::Grad || c == Category::Master ||
         c == Category::AdamM || c == Category::AdamV;
}

void MemoryLedger::setStep(int step) {
  std::lock_guard lock(m_mutex);
  m_step = step;
}

void MemoryLedger::stopRecording() {
  std::lock_guard lock(m_mutex);
  m_log = nullptr;
}

void MemoryLedger::onAlloc(Category c, int64_t bytes) {
  std::lock_guard lock(m_mutex);
  const auto i = static_cast<size_t>(c);
  m_books.current[i] += bytes;
  m_books.peak[i] = std::max(m_books.peak[i], m_books.current[i]);
  if (isModelState(c)) {
    m_modelState += bytes;
    m_books.model_state_peak = std::max(m_books.model_state_peak, m_modelState);
  }
  m_total += bytes;
  m_books.total_peak = std::max(m_books.total_peak, m_total);
  record(EventKind::Alloc, c, bytes);
}

void MemoryLedger::onFree(Category c, int64_t bytes) {
  std::lock_guard lock(m_mutex);
  const auto i = static_cast<size_t>(c);
  m_books.current[i] -= bytes;
  if (isModelState(c)) m_modelState -= bytes;
  m_total -= bytes;
  record(EventKind::Free, c, bytes);
}

void MemoryLedger::record(EventKind kind, Category c, int64_t bytes) {
  if (!m_log) return;
  Event e;
  e.begin_ns = e.end_ns = m_clock ? m_clock->nowNs() : 0;
  e.bytes = bytes;
  e.value = m_books.current[static_cast<size_t>(c)];
  e.step = m_step;
  e.rank = static_cast<int16_t>(m_rank);
  e.lane = Lane::Host;
  e.kind = kind;
  e.category = c;
  m_log->record(e);
}

LedgerSnapshot MemoryLedger::snapshot() const {
  std::lock_guard lock(m_mutex);
  return m_books;
}

int64_t MemoryLedger::current(Category c) const {
  std::lock_guard lock(m_mutex);
  return m_books.current[static_cast<size_t>(c)];
}

int64_t MemoryLedger::peak(Category c) const {
  std::lock_guard lock(m_mutex);
  return m_books.peak[static_cast<size_t>(c)];
}

}  // namespace shardscope
