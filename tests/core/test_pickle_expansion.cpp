// A small pickle cannot take the machine's memory: the memo lets one list or
// string be named from many places, and what the snapshot and flight-recorder
// readers copy out of a file is bounded relative to its size
// (ExpansionBudget), with one error naming the limit. Hand-made bombs under
// 1 MB that would copy gigabytes: 60 blocks sharing one 100k-frame list, 10k
// process groups sharing one 100k-rank list, entries sharing one frames list
// of long names. A dict of many keys that every entry shares is looked up by
// an index, and the last value set still wins.
#include <QtTest>

#include <functional>
#include <string>
#include <string_view>

#include "postmortem/flight_recorder.h"
#include "postmortem/memory_snapshot.h"
#include "postmortem/pickle_reader.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

// Protocol-2 opcodes, written as Python's pickler would (memo indices < 256).
struct PickleBytes {
  std::string b = std::string("\x80\x02", 2);
  PickleBytes& op(char c) {
    b.push_back(c);
    return *this;
  }
  PickleBytes& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  PickleBytes& str(std::string_view s) {
    op('X').u32(static_cast<uint32_t>(s.size()));
    b += s;
    return *this;
  }
  PickleBytes& integer(int32_t v) { return op('J').u32(static_cast<uint32_t>(v)); }
  PickleBytes& put(uint8_t memo) { return op('q').op(static_cast<char>(memo)); }
  PickleBytes& get(uint8_t memo) { return op('h').op(static_cast<char>(memo)); }
  std::string done() { return op('.').b; }
};

// One frame dict, memoized as `memo`, then `refs - 1` more references to it.
void sharedFrames(PickleBytes& p, uint8_t list_memo, uint8_t frame_memo, int refs, size_t name_bytes) {
  p.op(']').put(list_memo).op('(');
  p.op('}').put(frame_memo).op('(');
  p.str("filename").str("train.py").str("name").str(std::string(name_bytes, 'f')).str("line").integer(7).op('u');
  for (int i = 1; i < refs; ++i) p.get(frame_memo);
  p.op('e');
}

std::string expansionError(const std::function<void()>& read) {
  try {
    read();
  } catch (const PostmortemFormatError& e) {
    return e.what();
  }
  return "";
}

void expectTheLimitNamed(const std::string& error, size_t file_bytes) {
  QVERIFY2(error.find("expands past its limit") != std::string::npos, error.c_str());
  QVERIFY2(error.find("256 MiB") != std::string::npos, error.c_str());
  QVERIFY2(error.find("64 times the file's size") != std::string::npos, error.c_str());
  QVERIFY2(error.find(std::to_string(file_bytes) + "-byte file") != std::string::npos, error.c_str());
}

}  // namespace

class TestPickleExpansion : public QObject {
  Q_OBJECT

 private slots:
  // 60 live blocks share one list of 100k references to one frame with a
  // 1000-byte name: the 50 largest would copy about 5 GB of frames.
  void snapshotSharingOneFramesListIsRefused() {
    PickleBytes p;
    p.op('}').op('(').str("segments").op(']').op('(');
    p.op('}').op('(').str("device").integer(0).str("total_size").integer(1 << 30).str("address").integer(0);
    p.str("blocks").op(']').op('(');
    for (int blk = 0; blk < 60; ++blk) {
      p.op('}').op('(').str("size").integer(1024 * (blk + 1)).str("state").str("active_allocated").str("frames");
      if (blk == 0) sharedFrames(p, 1, 2, 100000, 1000);
      else p.get(1);
      p.op('u');
    }
    p.op('e').op('u');  // blocks, then the segment
    p.op('e').str("device_traces").op(']').op('u');
    const std::string bytes = p.done();
    QVERIFY(bytes.size() < 1000000);
    // The tree shares: reading the pickle itself is cheap.
    const ValueTree tree = readPostmortemDocument(bytes);
    QCOMPARE(tree.source_bytes, bytes.size());
    const std::string error = expansionError([&] { (void)buildMemorySnapshot(tree); });
    expectTheLimitNamed(error, bytes.size());
  }

  // 10k process groups share one list of 100k ranks: 4 GB of copied ranks.
  void dumpSharingOneRanksListIsRefused() {
    PickleBytes p;
    p.op('}').op('(').str("version").str("2.10").str("rank").integer(0).str("pg_config").op('}').op('(');
    for (int g = 0; g < 10000; ++g) {
      p.str(std::to_string(g)).op('}').op('(');
      if (g == 0) {
        p.str("ranks").put(3).op(']').put(1).op('(');
        for (int r = 0; r < 100000; ++r) p.integer(r);
        p.op('e');
      } else {
        p.get(3).get(1);
      }
      p.op('u');
    }
    p.op('u').op('u');
    const std::string bytes = p.done();
    QVERIFY(bytes.size() < 1000000);
    const ValueTree tree = readPostmortemDocument(bytes);
    const std::string error = expansionError([&] { (void)parseFlightRecorderDump(tree, 0, "bomb_rank_0.pkl"); });
    expectTheLimitNamed(error, bytes.size());
  }

  // 100k entries share one list of 64 frames whose name is 100 KB: each
  // entry would copy 6.4 MB of frames.
  void dumpEntriesSharingLongFramesAreRefused() {
    PickleBytes p;
    p.op('}').op('(').str("version").str("2.10").str("rank").integer(0).str("entries").op(']').op('(');
    for (int e = 0; e < 100000; ++e) {
      if (e == 0) {
        p.op('}').put(5).op('(').str("record_id").integer(0).str("collective_seq_id").integer(0);
        p.str("process_group").op('(').str("0").str("default_pg").op('t');
        p.str("profiling_name").str("nccl:all_reduce").str("state").str("completed").str("frames");
        sharedFrames(p, 1, 2, 64, 100000);
        p.op('u');
      } else {
        p.get(5);
      }
    }
    p.op('e').op('u');
    const std::string bytes = p.done();
    QVERIFY(bytes.size() < 1000000);
    const ValueTree tree = readPostmortemDocument(bytes);
    const std::string error = expansionError([&] { (void)parseFlightRecorderDump(tree, 0, "bomb_rank_0.pkl"); });
    expectTheLimitNamed(error, bytes.size());
  }

  // The same sharing at the scale PyTorch writes it (entries naming a few
  // tracebacks) reads: the budget is what the copies cost, not the sharing.
  void modestSharingReads() {
    PickleBytes p;
    p.op('}').op('(').str("version").str("2.10").str("rank").integer(0).str("entries").op(']').op('(');
    for (int e = 0; e < 2000; ++e) {
      p.op('}').op('(').str("record_id").integer(e).str("collective_seq_id").integer(e);
      p.str("process_group").op('(').str("0").str("default_pg").op('t');
      p.str("profiling_name").str("nccl:all_reduce").str("state").str("completed").str("frames");
      if (e == 0) sharedFrames(p, 1, 2, 20, 40);
      else p.get(1);
      p.op('u');
    }
    p.op('e').op('u');
    const ValueTree tree = readPostmortemDocument(p.done());
    const FrRankDump d = parseFlightRecorderDump(tree, 0, "rank_0.pkl");
    QCOMPARE(d.entries.size(), size_t{2000});
    QCOMPARE(d.entries.back().frames.size(), size_t{20});
  }

  void budgetCountsAndNamesItsLimit() {
    ExpansionBudget b(1 << 20);  // 1 MiB file: 64 MiB is under the floor
    QCOMPARE(b.limit(), ExpansionBudget::kFloor);
    b.charge(ExpansionBudget::kFloor - 1);
    b.charge(1);
    QCOMPARE(b.charged(), ExpansionBudget::kFloor);
    QVERIFY_THROWS_EXCEPTION(PostmortemFormatError, b.charge(1));
    ExpansionBudget big(size_t{16} << 20);  // 16 MiB file: 1 GiB
    QCOMPARE(big.limit(), uint64_t{1} << 30);
  }

  // A dict of many keys is looked up through its index: the last value set wins.
  void largeDictsAreIndexedAndTheLastValueWins() {
    PickleBytes p;
    p.op('}').op('(');
    for (int k = 0; k < 1000; ++k) p.str("junk" + std::to_string(k)).integer(k);
    p.str("frames").integer(1).str("frames").integer(2);
    p.op('u');
    const ValueTree tree = readPostmortemDocument(p.done());
    QVERIFY(tree.size(tree.root) > ValueTree::kIndexedDictPairs);
    const Value* frames = tree.get(tree.root, "frames");
    QVERIFY(frames != nullptr);
    QCOMPARE(frames->i, int64_t{2});
    QCOMPARE(tree.get(tree.root, "junk999")->i, int64_t{999});
    QVERIFY(tree.get(tree.root, "absent") == nullptr);
  }
};

QTEST_APPLESS_MAIN(TestPickleExpansion)
#include "test_pickle_expansion.moc"
