#include "memory/ledger_replay.h"

#include <algorithm>
#include <tuple>

namespace shardscope {

void sortEvents(std::vector<Event>& events) {
  // At equal times frees go first: a buffer freed and another allocated at the
  // same modeled instant were never both live.
  auto key = [](const Event& e) {
    return std::make_tuple(e.begin_ns, e.kind == EventKind::Free ? 0 : 1, static_cast<int>(e.lane), e.end_ns, static_cast<int>(e.kind), e.op,
                           e.block, e.unit, e.bucket, e.param, static_cast<int>(e.category), e.bytes,
                           e.step, e.seq, e.group, e.dep, e.value);
  };
  std::stable_sort(events.begin(), events.end(), [&](const Event& a, const Event& b) { return key(a) < key(b); });
}

LedgerSnapshot replayLedger(std::vector<Event>& events) {
  LedgerSnapshot books;
  int64_t model_state = 0, total = 0;
  for (Event& e : events) {
    if (e.kind != EventKind::Alloc && e.kind != EventKind::Free) continue;
    const auto c = static_cast<size_t>(e.category);
    const int64_t delta = e.kind == EventKind::Alloc ? e.bytes : -e.bytes;
    books.current[c] += delta;
    books.peak[c] = std::max(books.peak[c], books.current[c]);
    if (isModelState(e.category)) {
      model_state += delta;
      books.model_state_peak = std::max(books.model_state_peak, model_state);
    }
    total += delta;
    books.total_peak = std::max(books.total_peak, total);
    e.value = books.current[c];
  }
  return books;
}

}  // namespace shardscope
