// Min/max thinning of a snapshot's totals (see snapshot_series.h).
#include "postmortem/snapshot_series.h"

#include <algorithm>
#include <cmath>

namespace shardscope::postmortem {

double snapshotX(const SnapshotDevice& d, int64_t entry) {
  if (entry < 0) return 0.0;
  if (d.time_axis) return static_cast<double>(d.time_us[static_cast<size_t>(entry)] - d.time_us.front());
  return static_cast<double>(entry);
}

int64_t snapshotEntryAt(const SnapshotDevice& d, double x) {
  const auto n = static_cast<int64_t>(d.entries());
  if (n == 0) return -1;
  if (!d.time_axis) return std::clamp<int64_t>(static_cast<int64_t>(std::floor(x)), -1, n - 1);
  const double t = x + static_cast<double>(d.time_us.front());
  const auto it = std::upper_bound(d.time_us.begin(), d.time_us.end(), t,
                                   [](double v, int64_t e) { return v < static_cast<double>(e); });
  return static_cast<int64_t>(it - d.time_us.begin()) - 1;
}

namespace {

void snapshotPush(SnapshotCurve& c, const SnapshotDevice& d, const std::vector<int64_t>& totals, int64_t i) {
  if (!c.entry.empty() && c.entry.back() == i) return;
  c.x.push_back(snapshotX(d, i));
  c.bytes.push_back(totals[static_cast<size_t>(i)]);
  c.entry.push_back(i);
}

// Entries [first, last] in `columns` equal slices of x: each slice gives its
// lowest and highest entry, in trace order; the first and last entries always stay.
SnapshotCurve snapshotThin(const SnapshotDevice& d, const std::vector<int64_t>& totals, int64_t first, int64_t last,
                           double x0, double x1, int columns) {
  SnapshotCurve c;
  if (first > last) return c;
  const int64_t count = last - first + 1;
  const size_t room = static_cast<size_t>(std::min<int64_t>(count, 2 * static_cast<int64_t>(columns) + 2));
  c.x.reserve(room);
  c.bytes.reserve(room);
  c.entry.reserve(room);
  if (count <= 2 * static_cast<int64_t>(columns)) {
    for (int64_t i = first; i <= last; ++i) snapshotPush(c, d, totals, i);
    return c;
  }
  snapshotPush(c, d, totals, first);
  const double width = x1 > x0 ? (x1 - x0) / columns : 1.0;
  int64_t i = first;
  while (i <= last) {
    const double column = std::floor((snapshotX(d, i) - x0) / width);
    int64_t lo = i, hi = i;
    int64_t j = i + 1;
    for (; j <= last && std::floor((snapshotX(d, j) - x0) / width) == column; ++j) {
      if (totals[static_cast<size_t>(j)] < totals[static_cast<size_t>(lo)]) lo = j;
      if (totals[static_cast<size_t>(j)] > totals[static_cast<size_t>(hi)]) hi = j;
    }
    snapshotPush(c, d, totals, std::min(lo, hi));
    snapshotPush(c, d, totals, std::max(lo, hi));
    i = j;
  }
  snapshotPush(c, d, totals, last);
  return c;
}

}  // namespace

SnapshotSeries snapshotSeries(const SnapshotDevice& d, double x0, double x1, int columns) {
  SnapshotSeries s;
  const auto n = static_cast<int64_t>(d.entries());
  if (n == 0 || columns < 1) return s;
  int64_t first = std::max<int64_t>(0, snapshotEntryAt(d, x0));
  int64_t last = std::max<int64_t>(0, snapshotEntryAt(d, x1));
  if (last < n - 1) ++last;  // the line leaves the window at the right height too
  s.allocated = snapshotThin(d, d.allocated, first, last, x0, x1, columns);
  s.reserved = snapshotThin(d, d.reserved, first, last, x0, x1, columns);
  return s;
}

SnapshotSeries snapshotSeries(const SnapshotDevice& d, int columns) {
  if (d.entries() == 0) return {};
  return snapshotSeries(d, snapshotX(d, 0), snapshotX(d, static_cast<int64_t>(d.entries()) - 1), columns);
}

}  // namespace shardscope::postmortem
