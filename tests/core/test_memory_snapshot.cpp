// PyTorch memory snapshots rebuilt over their trace: the fixtures of
// tests/data/postmortem/make_fixtures.py with totals worked by hand there
// (one and two devices, expandable segments, an OOM, no time_us, JSON), the
// category rules, and one clear error for each malformed field.
#include <QtTest>

#include <string>

#include "postmortem/memory_snapshot.h"
#include "postmortem/pickle_reader.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";
constexpr int64_t MiB = 1 << 20;

int64_t cat(const SnapshotDevice& d, SnapshotCategory c) { return d.peak_by_category[static_cast<size_t>(c)]; }

std::string buildError(const std::string& json) {
  try {
    (void)buildMemorySnapshot(readPostmortemDocument(json));
  } catch (const PostmortemFormatError& e) {
    return e.what();
  }
  return "";
}

void checkDevice0(const SnapshotDevice& d, bool timed) {
  QCOMPARE(d.device, 0);
  QCOMPARE(d.entries(), size_t(10));
  QCOMPARE(d.hasTime(), timed);
  QCOMPARE(d.initial_allocated, int64_t(0));
  QCOMPARE(d.initial_reserved, int64_t(0));
  const std::vector<int64_t> allocated = {0, 1000000, 1500000, 1800000, 1800000, 1300000, 1300000, 1000000, 1000000, 1000000};
  const std::vector<int64_t> reserved = {2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 3 * MiB, 2 * MiB};
  QCOMPARE(d.allocated, allocated);
  QCOMPARE(d.reserved, reserved);
  QCOMPARE(d.peak_allocated, int64_t(1800000));
  QCOMPARE(d.peak_allocated_index, int64_t(3));
  QCOMPARE(d.peak_reserved, 3 * MiB);
  QCOMPARE(d.peak_reserved_index, int64_t(8));
  QCOMPARE(d.final_allocated, int64_t(1000000));
  QCOMPARE(d.final_reserved, 2 * MiB);
  QCOMPARE(cat(d, SnapshotCategory::Optimizer), int64_t(1000000));
  QCOMPARE(cat(d, SnapshotCategory::Activation), int64_t(500000));
  QCOMPARE(cat(d, SnapshotCategory::Gathered), int64_t(300000));
  QCOMPARE(cat(d, SnapshotCategory::Grad), int64_t(0));
  QCOMPARE(cat(d, SnapshotCategory::Other), int64_t(0));
  QCOMPARE(d.inconsistent_entries, int64_t(0));
  if (timed) QCOMPARE(d.time_us[3], int64_t(1030));
}

}  // namespace

class TestMemorySnapshot : public QObject {
  Q_OBJECT

 private slots:
  void oneDevice() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_one_device.pickle");
    QCOMPARE(s.devices.size(), size_t(1));
    checkDevice0(s.devices[0], true);
  }

  void noTimeUsJson() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_no_time.json");
    QCOMPARE(s.devices.size(), size_t(1));
    checkDevice0(s.devices[0], false);
  }

  void twoDevicesAndAllocationsBeforeTheTrace() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_two_devices.pickle");
    QCOMPARE(s.devices.size(), size_t(2));
    checkDevice0(s.devices[0], true);
    const SnapshotDevice& d = s.devices[1];
    QCOMPARE(d.device, 1);
    QCOMPARE(d.initial_allocated, 2 * MiB);  // params live before the trace, no stack
    QCOMPARE(d.initial_reserved, 4 * MiB);
    QCOMPARE(d.peak_allocated, 3 * MiB);
    QCOMPARE(d.peak_allocated_index, int64_t(0));
    QCOMPARE(d.peak_reserved, 4 * MiB);
    QCOMPARE(d.peak_reserved_index, int64_t(-1));  // reached before the first entry
    QCOMPARE(cat(d, SnapshotCategory::Grad), MiB);
    QCOMPARE(cat(d, SnapshotCategory::Other), 2 * MiB);
    QCOMPARE(d.peak_no_stack_bytes, 2 * MiB);
    QCOMPARE(d.final_allocated, 2 * MiB);
  }

  void expandableSegments() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_expandable.pickle");
    const SnapshotDevice& d = s.devices.at(0);
    QCOMPARE(d.reserved, (std::vector<int64_t>{2 * MiB, 2 * MiB, 6 * MiB, 6 * MiB, 6 * MiB, 4 * MiB}));
    QCOMPARE(d.allocated, (std::vector<int64_t>{0, 2 * MiB, 2 * MiB, 6 * MiB, 2 * MiB, 2 * MiB}));
    QCOMPARE(d.peak_reserved_index, int64_t(2));
    QCOMPARE(d.peak_allocated_index, int64_t(3));
    QCOMPARE(cat(d, SnapshotCategory::Activation), 6 * MiB);
  }

  void oomIsMarked() {
    const MemorySnapshot s = readMemorySnapshotFile(kData + "snapshot_oom.pickle");
    const SnapshotDevice& d = s.devices.at(0);
    QCOMPARE(d.ooms.size(), size_t(1));
    QCOMPARE(d.ooms[0].index, size_t(2));
    QCOMPARE(d.ooms[0].requested_bytes, 16 * MiB);
    QCOMPARE(d.ooms[0].device_free_bytes, MiB);
    QCOMPARE(d.ooms[0].time_us, int64_t(12));
    QCOMPARE(d.allocatedAt(2), 8 * MiB);
  }

  void traceDisagreeingWithSegmentsIsCounted() {
    // The trace frees 100 bytes the final state and the trace never had: before it, -100.
    const MemorySnapshot s = buildMemorySnapshot(readPostmortemDocument(
        R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 16, "size": 100}]]})"));
    QCOMPARE(s.devices.at(0).initial_allocated, int64_t(-100));
    QVERIFY(s.devices.at(0).inconsistent_entries > 0);
  }

  void categoryRules() {
    auto classify = [](std::initializer_list<FrameText> frames) {
      FrameClassifier c;
      for (const FrameText& f : frames) c.add(f);
      return c.result();
    };
    QCOMPARE(classify({{"torch/optim/adam.py", "_init_group"}}), SnapshotCategory::Optimizer);
    QCOMPARE(classify({{"x.py", "exp_avg_sq"}, {"model.py", "forward"}}), SnapshotCategory::Optimizer);
    QCOMPARE(classify({{"fsdp.py", "_reduce_grad"}, {"model.py", "forward"}}), SnapshotCategory::Grad);
    QCOMPARE(classify({{"fsdp.py", "_unshard"}, {"model.py", "forward"}}), SnapshotCategory::Gathered);
    QCOMPARE(classify({{"model.py", "forward"}}), SnapshotCategory::Activation);
    // A forward frame under autograd's backward is a recompute or a hook, not a saved activation.
    QCOMPARE(classify({{"model.py", "forward"}, {"torch/autograd/graph.py", "_engine_run_backward"}}), SnapshotCategory::Other);
    QCOMPARE(classify({{"main.py", "main"}}), SnapshotCategory::Other);
    QCOMPARE(classify({}), SnapshotCategory::Other);
  }

  void badFieldsAreNamed_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expected");
    QTest::newRow("root list") << "[]" << "the document must be a dict with 'segments'";
    QTest::newRow("no segments") << R"({"device_traces": []})" << "segments must be a list";
    QTest::newRow("negative size") << R"({"segments": [{"device": 0, "total_size": -1}]})"
                                   << "segments[0].total_size must be an integer >= 0";
    QTest::newRow("size text") << R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": "8"}]]})"
                               << "device_traces[0][0].size must be an integer >= 0 (below 2^63), found str \"8\"";
    QTest::newRow("action") << R"({"segments": [], "device_traces": [[{"action": "grow", "addr": 1, "size": 8}]]})"
                            << "device_traces[0][0].action 'grow' is none of alloc";
    QTest::newRow("block state") << R"({"segments": [{"device": 0, "total_size": 8, "blocks": [{"size": 8, "state": "x"}]}]})"
                                 << "segments[0].blocks[0].state 'x' is none of";
    QTest::newRow("device far") << R"({"segments": [{"device": 100000, "total_size": 8}]})" << "more devices than the 4096";
    QTest::newRow("overflow") << R"({"segments": [{"device": 0, "total_size": 9223372036854775807}, {"device": 0, "total_size": 9223372036854775807}]})"
                              << "add up past 2^63";
  }
  void badFieldsAreNamed() {
    QFETCH(QString, json);
    QFETCH(QString, expected);
    const std::string error = buildError(json.toStdString());
    QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMemorySnapshot)
#include "test_memory_snapshot.moc"
