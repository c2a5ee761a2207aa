// What the snapshot page shows, from the core model: the ledger by category
// at any trace entry (worked by hand from make_fixtures.py's device 0 and 1),
// the largest live allocations at the peak with their stacks (the unwinder's
// own frames left out as memory_viz does, the user's frame named, in analyze's
// JSON too), and the chart's thinning, which keeps every peak and dip of a
// long trace at its entry.
#include <QtTest>

#include <string>

#include "postmortem/memory_snapshot.h"
#include "postmortem/postmortem_report.h"
#include "postmortem/snapshot_ledger.h"
#include "postmortem/snapshot_series.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";
constexpr int64_t MiB = 1 << 20;

bool keeps(const SnapshotCurve& c, int64_t entry) { return std::find(c.entry.begin(), c.entry.end(), entry) != c.entry.end(); }

SnapshotDevice syntheticDevice(size_t n, bool timed) {
  SnapshotDevice d;
  d.actions.assign(n, SnapshotAction::Snapshot);
  d.sizes.assign(n, 0);
  d.allocated.resize(n);
  d.reserved.resize(n);
  for (size_t i = 0; i < n; ++i) {
    d.allocated[i] = 100 + static_cast<int64_t>(i % 7) * 10;
    d.reserved[i] = 1000;
  }
  d.allocated[54321] = 1000000000;  // one spike
  d.allocated[12345] = 0;           // one dip
  d.reserved[77777] = 5000;
  if (timed) {
    d.time_us.resize(n);
    for (size_t i = 0; i < n; ++i) d.time_us[i] = 500 + 3 * static_cast<int64_t>(i);
    d.time_axis = true;
  }
  return d;
}

}  // namespace

class TestSnapshotLedger : public QObject {
  Q_OBJECT

 private slots:
  void ledgerAtEveryEntry() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_one_device.pickle");
    const SnapshotDevice& d = s.devices.at(0);
    // Before the trace nothing is live; after entry 2 the optimizer state (1e6)
    // and an activation (5e5); after entry 5 the activation is freed and the gather (3e5) live.
    const SnapshotLedger before = snapshotLedgerAt(d, -1);
    QCOMPARE(before.categorized(), int64_t(0));
    QCOMPARE(before.entry, int64_t(-1));
    const SnapshotLedger e2 = snapshotLedgerAt(d, 2);
    QCOMPARE(e2.bytes(SnapshotCategory::Optimizer), int64_t(1000000));
    QCOMPARE(e2.bytes(SnapshotCategory::Activation), int64_t(500000));
    QCOMPARE(e2.allocated, int64_t(1500000));
    QCOMPARE(e2.reserved, 2 * MiB);
    const SnapshotLedger e5 = snapshotLedgerAt(d, 5);
    QCOMPARE(e5.bytes(SnapshotCategory::Activation), int64_t(0));
    QCOMPARE(e5.bytes(SnapshotCategory::Gathered), int64_t(300000));
    QCOMPARE(e5.categorized(), e5.allocated);
    const SnapshotLedger last = snapshotLedgerAt(d, 1000);  // clamped to the last entry
    QCOMPARE(last.entry, int64_t(9));
    QCOMPARE(last.categorized(), d.final_allocated);
    QCOMPARE(last.unattributedShare(), 0.0);
    // The peak's ledger is the model's peak_by_category.
    QCOMPARE(snapshotLedgerAt(d, d.peak_allocated_index).by_category, d.peak_by_category);
    QCOMPARE(d.alloc_of[5], int32_t(2));
    QCOMPARE(d.alloc_of[7], int32_t(3));
  }

  void largestAtThePeakWithStacks() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_two_devices.pickle");
    const SnapshotDevice& d0 = s.devices.at(0);
    QCOMPARE(d0.peak_live_allocations, size_t(3));
    QCOMPARE(d0.peak_largest.size(), size_t(3));
    const SnapshotAllocation& top = d0.peak_largest[0];
    QCOMPARE(top.size, int64_t(1000000));
    QCOMPARE(top.entry, int64_t(1));
    QCOMPARE(top.category, SnapshotCategory::Optimizer);
    QCOMPARE(top.addr, int64_t(0x7F0000000000));
    QCOMPARE(top.frames.size(), size_t(2));
    QCOMPARE(top.frames[0].filename, std::string("torch/optim/adam.py"));
    QCOMPARE(top.frames[0].line, int64_t(94));
    QCOMPARE(top.frames[0].name, std::string("_init_group"));
    QCOMPARE(d0.peak_largest[1].size, int64_t(500000));
    QCOMPARE(d0.peak_largest[2].category, SnapshotCategory::Gathered);
    // Device 1: 2 MiB of params from before the trace (no stack) outrank the 1 MiB gradient.
    const SnapshotDevice& d1 = s.devices.at(1);
    QCOMPARE(d1.peak_largest.size(), size_t(2));
    QCOMPARE(d1.peak_largest[0].size, 2 * MiB);
    QCOMPARE(d1.peak_largest[0].entry, int64_t(-1));
    QVERIFY(d1.peak_largest[0].frames.empty());
    QCOMPARE(d1.peak_largest[1].category, SnapshotCategory::Grad);
    QCOMPARE(d1.peak_largest[1].frames.front().name, std::string("_reduce_grad"));
    const SnapshotLedger before = snapshotLedgerAt(d1, -1);
    QCOMPARE(before.bytes(SnapshotCategory::Other), 2 * MiB);
    QCOMPARE(before.no_stack_bytes, 2 * MiB);
    QCOMPARE(before.unattributedShare(), 1.0);
  }

  void unwinderFramesLeftOutAsMemoryVizDoes() {
    // snapshot_unwinder_frames.json (written by hand in the snapshot's JSON form): a 2 MiB
    // allocation whose stack opens with `??:0 torch::unwind::unwind()`, CapturedTraceback::gather,
    // the caching allocator, a boxing.h frame, ceval.c and PyObject_Call, then model.py, module.py,
    // train.py, __libc_start_main and _start; and a 1 MiB one with only the unwinder's two frames.
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_unwinder_frames.json");
    const SnapshotDevice& d = s.devices.at(0);
    QCOMPARE(d.peak_largest.size(), size_t(2));
    const SnapshotAllocation& top = d.peak_largest[0];
    QCOMPARE(top.size, 2 * MiB);
    // Left out: unwind, gather, boxing.h, ceval.c, PyObject_Call, __libc_start_main, _start (7 of 11).
    QCOMPARE(top.frames_omitted, 7);
    QCOMPARE(top.frames.size(), size_t(4));
    QCOMPARE(top.frames[0].name.rfind("c10::cuda::CUDACachingAllocator", 0), size_t(0));  // memory_viz keeps it
    QCOMPARE(top.user_frame, 1);  // the first Python frame: model.py
    QCOMPARE(snapshotUserFrameText(top), std::string("/work/model.py:40 forward"));
    const SnapshotAllocation& bare = d.peak_largest[1];
    QVERIFY(bare.frames.empty());
    QCOMPARE(bare.frames_omitted, 2);
    QCOMPARE(snapshotUserFrameText(bare), std::string("(only the unwinder's frames recorded)"));
    // analyze --json: the largest at the peak with their user frames.
    const Json j = memorySnapshotJson(s, "x");
    const Json& largest = j["devices"][0]["largest_at_peak"];
    QCOMPARE(largest.size(), size_t(2));
    QCOMPARE(largest[0]["bytes"].get<int64_t>(), 2 * MiB);
    QCOMPARE(largest[0]["frame"].get<std::string>(), std::string("/work/model.py:40 forward"));
    QCOMPARE(largest[0]["frames_omitted"].get<int>(), 7);
    QCOMPARE(j["devices"][0]["live_allocations_at_peak"].get<size_t>(), size_t(2));
  }

  void thinningKeepsPeaksAndDips() {
    for (const bool timed : {false, true}) {
      const SnapshotDevice d = syntheticDevice(100000, timed);
      const SnapshotSeries s = snapshotSeries(d, 100);
      QVERIFY2(s.allocated.x.size() <= 202, qPrintable(QString::number(s.allocated.x.size())));
      QVERIFY(keeps(s.allocated, 54321));
      QVERIFY(keeps(s.allocated, 12345));
      QVERIFY(keeps(s.reserved, 77777));
      QCOMPARE(s.allocated.entry.front(), int64_t(0));
      QCOMPARE(s.allocated.entry.back(), int64_t(99999));
      QVERIFY(std::is_sorted(s.allocated.x.begin(), s.allocated.x.end()));
      const auto spike = std::find(s.allocated.entry.begin(), s.allocated.entry.end(), int64_t(54321)) - s.allocated.entry.begin();
      QCOMPARE(s.allocated.bytes[static_cast<size_t>(spike)], int64_t(1000000000));
      QCOMPARE(s.allocated.x[static_cast<size_t>(spike)], timed ? 3.0 * 54321 : 54321.0);
    }
  }

  void zoomedWindowAndClicks() {
    const SnapshotDevice d = syntheticDevice(100000, true);
    QCOMPARE(snapshotX(d, 10), 30.0);
    QCOMPARE(snapshotEntryAt(d, 31.0), int64_t(10));
    QCOMPARE(snapshotEntryAt(d, -1.0), int64_t(-1));
    QCOMPARE(snapshotEntryAt(d, 1e12), int64_t(99999));
    // x 3000..6000 µs is entries 1000..2000: few enough to keep all, and the one after.
    const SnapshotSeries s = snapshotSeries(d, 3000, 6000, 5000);
    QCOMPARE(s.allocated.entry.front(), int64_t(1000));
    QCOMPARE(s.allocated.entry.back(), int64_t(2001));
    QCOMPARE(s.allocated.x.size(), size_t(1002));
  }
};

QTEST_APPLESS_MAIN(TestSnapshotLedger)
#include "test_snapshot_ledger.moc"
