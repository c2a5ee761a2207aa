// A snapshot's allocated and reserved bytes over its trace, thinned to what a
// chart of a given width can show: per pixel column, the entries where each
// total is lowest and highest (in trace order), so every peak and dip stays
// exactly where it is while a million entries become a few thousand points.
#pragma once

#include <cstdint>
#include <vector>

#include "postmortem/memory_snapshot.h"

namespace shardscope::postmortem {

// The chart's x of an entry: µs since the first entry when the device's
// trace is on a time axis (SnapshotDevice::time_axis), else the entry index.
double snapshotX(const SnapshotDevice& d, int64_t entry);
// The last entry at or before x (-1: none), for a click on the chart.
int64_t snapshotEntryAt(const SnapshotDevice& d, double x);

struct SnapshotCurve {
  std::vector<double> x;      // snapshotX of each kept entry, ascending
  std::vector<int64_t> bytes; // the total after that entry
  std::vector<int64_t> entry; // which entry
};

struct SnapshotSeries {
  SnapshotCurve allocated, reserved;
};

// The entries with x in [x0, x1] (and the one before x0, so the line enters
// the window at the right height), at most about 2 × columns per curve.
SnapshotSeries snapshotSeries(const SnapshotDevice& d, double x0, double x1, int columns);
// The whole trace.
SnapshotSeries snapshotSeries(const SnapshotDevice& d, int columns);

}  // namespace shardscope::postmortem
