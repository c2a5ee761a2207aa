// Gloo ring collectives with ranks as threads, on inputs whose sums are small
// integers (exact in bf16 at every partial sum), so results compare with ==.
// bytesSent is checked against the ring formulas: 2(P-1)/P x bytes for
// all-reduce, (P-1)/P x the full buffer for reduce-scatter and all-gather.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/gloo_communicator.h"
#include "sanitizer_build.h"
#include "tensor/bf16.h"

using namespace shardscope;

namespace {

using Group = std::vector<std::unique_ptr<Communicator>>;

// Runs body(rank) on one thread per rank; rethrows the first rank's exception
// here, after every thread has joined (QTest macros are main-thread only).
void runRanks(int ranks, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Values as f32 or bf16 storage; every value used here is an integer <= 256.
std::vector<char> encode(const std::vector<float>& values, DType dtype) {
  std::vector<char> bytes(values.size() * dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(bytes.data() + i * 4, &values[i], 4);
    } else {
      const bf16 b = toBf16(values[i]);
      std::memcpy(bytes.data() + i * 2, &b, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(const std::vector<char>& bytes, DType dtype) {
  const size_t e = dtypeSize(dtype);
  std::vector<float> values(bytes.size() / e);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&values[i], bytes.data() + i * 4, 4);
    } else {
      bf16 b;
      std::memcpy(&b, bytes.data() + i * 2, 2);
      values[i] = toFloat(b);
    }
  }
  return values;
}

// First index where got != want, or -1.
long firstMismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) return static_cast<long>(i);
  }
  return -1;
}

// Every member's pipelining segment (0: the default, 1 MiB). The
// multi-segment rows use 4 KiB, so a few thousand elements span the
// segments that megabytes would at 1 MiB (the same code; under a sanitizer,
// megabytes take tens of seconds); the 1 MiB rows run outside sanitizers.
constexpr int kSmallSegment = 4096;
void setSegments(Group& group, int bytes) {
  for (auto& member : group) {
    auto* gloo = dynamic_cast<GlooCommunicator*>(member.get());
    QVERIFY(gloo);
    gloo->setSegmentBytes(bytes > 0 ? size_t(bytes) : GlooCommunicator::kDefaultSegmentBytes);
  }
}

const DType kDtypes[] = {DType::F32, DType::BF16};
const char* name(DType t) { return t == DType::F32 ? "f32" : "bf16"; }

}  // namespace

class TestGlooCommunicator : public QObject {
  Q_OBJECT

  // One group per size, shared by the table-driven tests: setting up and closing
  // a group costs tens of ms, and reuse checks that consecutive collectives of
  // different kinds never mix their messages.
  std::map<int, Group> m_groups;
  Group& groupOf(int ranks) {
    Group& g = m_groups[ranks];
    if (g.empty()) g = createGlooGroup(ranks, "shared-" + std::to_string(ranks), 10000);
    return g;
  }

 private slots:
  void allReduce_data();
  void allReduce();
  void reduceScatter_data();
  void reduceScatter();
  void reduceScatterInPlace();
  void allGather_data();
  void allGather();
  void broadcast_data();
  void broadcast();
  void barrier_data();
  void barrier();
  void twoGroupsAtOnce();
  void missingRankTimesOut();
  void closedPeerThrows();
  void sharedMemoryRingsFailCleanly();
  void rejectsBadArguments();
  void sharedMemoryAndTcpAgree();
};

void TestGlooCommunicator::allReduce_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("count");
  QTest::addColumn<int>("segment");
  QTest::newRow("P1") << 1 << 1000 << 0;
  QTest::newRow("P2") << 2 << 1000 << 0;
  QTest::newRow("P3") << 3 << 999 << 0;
  QTest::newRow("P4") << 4 << 1000 << 0;
  QTest::newRow("P4 uneven 7") << 4 << 7 << 0;
  QTest::newRow("P4 fewer elements than ranks") << 4 << 2 << 0;
  QTest::newRow("P3 uneven 1001") << 3 << 1001 << 0;
  // Chunks span several segments (the pipelining unit) in f32 and bf16.
  QTest::newRow("P3 multi-segment") << 3 << 3 * 2344 + 2 << kSmallSegment;
  QTest::newRow("P4 multi-segment") << 4 << 4 * 1172 << kSmallSegment;
#ifndef SHARDSCOPE_UNDER_SANITIZER
  QTest::newRow("P3 multi-segment, 1 MiB segments") << 3 << 3 * 600000 + 2 << 0;
  QTest::newRow("P4 multi-segment, 1 MiB segments") << 4 << 4 * 300000 << 0;
#endif
}

void TestGlooCommunicator::allReduce() {
  QFETCH(int, ranks);
  QFETCH(int, count);
  QFETCH(int, segment);
  const size_t n = static_cast<size_t>(count);
  Group& group = groupOf(ranks);
  QCOMPARE(int(group.size()), ranks);
  setSegments(group, segment);
  for (DType dtype : kDtypes) {
    // rank r holds (r + 1) * (i % 7 + 1): the sum is P(P+1)/2 * (i % 7 + 1) <= 70.
    std::vector<std::vector<char>> data(static_cast<size_t>(ranks));
    std::vector<uint64_t> sent(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = float((r + 1) * int(i % 7 + 1));
      data[size_t(r)] = encode(v, dtype);
    }
    runRanks(ranks, [&](int r) {
      Communicator& comm = *group[size_t(r)];
      const uint64_t before = comm.bytesSent();
      comm.allReduce(data[size_t(r)].data(), n, dtype);
      sent[size_t(r)] = comm.bytesSent() - before;
    });
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = float(ranks * (ranks + 1) / 2 * int(i % 7 + 1));
    const size_t bytes = n * dtypeSize(dtype);
    for (int r = 0; r < ranks; ++r) {
      const long bad = firstMismatch(decode(data[size_t(r)], dtype), want);
      QVERIFY2(bad < 0, qPrintable(QString("%1 rank %2: first wrong element %3")
                                       .arg(name(dtype)).arg(r).arg(bad)));
      const uint64_t s = sent[size_t(r)];
      if (n % size_t(ranks) == 0) {
        QCOMPARE(s, uint64_t(2 * (ranks - 1)) * bytes / uint64_t(ranks));
      } else {  // uneven chunks: between the floor and ceiling chunk sizes
        const uint64_t lo = uint64_t(2 * (ranks - 1)) * (n / size_t(ranks)) * dtypeSize(dtype);
        const uint64_t hi = uint64_t(2 * (ranks - 1)) * (n / size_t(ranks) + 1) * dtypeSize(dtype);
        QVERIFY2(s >= lo && s <= hi, qPrintable(QString("rank %1 sent %2, expected [%3, %4]")
                                                    .arg(r).arg(s).arg(lo).arg(hi)));
      }
    }
  }
}

void TestGlooCommunicator::reduceScatter_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("count");
  QTest::addColumn<int>("segment");
  QTest::newRow("P1") << 1 << 64 << 0;
  QTest::newRow("P2") << 2 << 1000 << 0;
  QTest::newRow("P3") << 3 << 333 << 0;
  QTest::newRow("P4") << 4 << 1000 << 0;
  QTest::newRow("P4 multi-segment") << 4 << 2344 << kSmallSegment;
#ifndef SHARDSCOPE_UNDER_SANITIZER
  QTest::newRow("P4 multi-segment, 1 MiB segments") << 4 << 600000 << 0;
#endif
}

void TestGlooCommunicator::reduceScatter() {
  QFETCH(int, ranks);
  QFETCH(int, count);
  QFETCH(int, segment);
  const size_t n = static_cast<size_t>(count);
  const size_t P = static_cast<size_t>(ranks);
  Group& group = groupOf(ranks);
  setSegments(group, segment);
  for (DType dtype : kDtypes) {
    // input chunk c of rank r holds (r + 1) * (c + 1) + i % 3.
    std::vector<std::vector<char>> in(P), out(P);
    std::vector<uint64_t> sent(P);
    for (size_t r = 0; r < P; ++r) {
      std::vector<float> v(n * P);
      for (size_t c = 0; c < P; ++c) {
        for (size_t i = 0; i < n; ++i) v[c * n + i] = float((r + 1) * (c + 1) + i % 3);
      }
      in[r] = encode(v, dtype);
      out[r].assign(n * dtypeSize(dtype), 0);
    }
    runRanks(ranks, [&](int r) {
      Communicator& comm = *group[size_t(r)];
      const uint64_t before = comm.bytesSent();
      comm.reduceScatter(in[size_t(r)].data(), out[size_t(r)].data(), n, dtype);
      sent[size_t(r)] = comm.bytesSent() - before;
    });
    for (size_t r = 0; r < P; ++r) {
      std::vector<float> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = float(P * (P + 1) / 2 * (r + 1) + P * (i % 3));
      const long bad = firstMismatch(decode(out[r], dtype), want);
      QVERIFY2(bad < 0, qPrintable(QString("%1 rank %2: first wrong element %3")
                                       .arg(name(dtype)).arg(r).arg(bad)));
      QCOMPARE(sent[r], uint64_t(P - 1) * n * dtypeSize(dtype));
    }
  }
}

void TestGlooCommunicator::reduceScatterInPlace() {
  // output = input + rank * count, as ZeRO shards a flat gradient buffer.
  const int ranks = 3;
  const size_t n = 500;
  Group group = createGlooGroup(ranks, "rs-inplace", 10000);
  std::vector<std::vector<float>> buf(ranks, std::vector<float>(n * ranks));
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t j = 0; j < n * ranks; ++j) buf[r][j] = float(r + 1 + j % 5);
  }
  runRanks(ranks, [&](int r) {
    float* base = buf[size_t(r)].data();
    group[size_t(r)]->reduceScatter(base, base + size_t(r) * n, n, DType::F32);
  });
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const size_t j = r * n + i;
      QCOMPARE(buf[r][j], float(6 + 3 * (j % 5)));
    }
  }
}

void TestGlooCommunicator::allGather_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("count");
  QTest::addColumn<int>("segment");
  QTest::newRow("P1") << 1 << 100 << 0;
  QTest::newRow("P2") << 2 << 1000 << 0;
  QTest::newRow("P3") << 3 << 777 << 0;
  QTest::newRow("P4") << 4 << 1000 << 0;
  QTest::newRow("P4 multi-segment") << 4 << 2344 << kSmallSegment;
#ifndef SHARDSCOPE_UNDER_SANITIZER
  QTest::newRow("P4 multi-segment, 1 MiB segments") << 4 << 600000 << 0;
#endif
}

void TestGlooCommunicator::allGather() {
  QFETCH(int, ranks);
  QFETCH(int, count);
  QFETCH(int, segment);
  const size_t n = static_cast<size_t>(count);
  const size_t P = static_cast<size_t>(ranks);
  Group& group = groupOf(ranks);
  setSegments(group, segment);
  for (DType dtype : kDtypes) {
    std::vector<std::vector<char>> in(P), out(P);
    std::vector<uint64_t> sent(P);
    for (size_t r = 0; r < P; ++r) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = float(10 * r + i % 5);
      in[r] = encode(v, dtype);
      out[r].assign(n * P * dtypeSize(dtype), 0);
    }
    runRanks(ranks, [&](int r) {
      Communicator& comm = *group[size_t(r)];
      const uint64_t before = comm.bytesSent();
      comm.allGather(in[size_t(r)].data(), out[size_t(r)].data(), n, dtype);
      sent[size_t(r)] = comm.bytesSent() - before;
    });
    std::vector<float> want(n * P);
    for (size_t c = 0; c < P; ++c) {
      for (size_t i = 0; i < n; ++i) want[c * n + i] = float(10 * c + i % 5);
    }
    for (size_t r = 0; r < P; ++r) {
      const long bad = firstMismatch(decode(out[r], dtype), want);
      QVERIFY2(bad < 0, qPrintable(QString("%1 rank %2: first wrong element %3")
                                       .arg(name(dtype)).arg(r).arg(bad)));
      QCOMPARE(sent[r], uint64_t(P - 1) * n * dtypeSize(dtype));
    }
  }
}

void TestGlooCommunicator::broadcast_data() {
  QTest::addColumn<int>("ranks");
  QTest::addColumn<int>("root");
  QTest::newRow("P1") << 1 << 0;
  QTest::newRow("P2 root 1") << 2 << 1;
  QTest::newRow("P3 root 0") << 3 << 0;
  QTest::newRow("P4 root 2") << 4 << 2;
}

void TestGlooCommunicator::broadcast() {
  QFETCH(int, ranks);
  QFETCH(int, root);
  const size_t P = static_cast<size_t>(ranks);
  Group& group = groupOf(ranks);
  // (elements, segment bytes): one segment; several small ones; several of 1 MiB.
  std::vector<std::pair<size_t, int>> sizes = {{13, 0}, {2344, kSmallSegment}};
#ifndef SHARDSCOPE_UNDER_SANITIZER
  sizes.push_back({600000, 0});
#endif
  for (DType dtype : kDtypes) {
    for (const auto& size : sizes) {
      const size_t n = size.first;  // a plain variable: lambdas below capture it
      setSegments(group, size.second);
      std::vector<float> source(n);
      for (size_t i = 0; i < n; ++i) source[i] = float(i % 11 + 1);
      std::vector<std::vector<char>> data(P);
      std::vector<uint64_t> sent(P);
      for (size_t r = 0; r < P; ++r) {
        data[r] = encode(int(r) == root ? source : std::vector<float>(n, 0.0f), dtype);
      }
      runRanks(ranks, [&](int r) {
        Communicator& comm = *group[size_t(r)];
        const uint64_t before = comm.bytesSent();
        comm.broadcast(data[size_t(r)].data(), n, dtype, root);
        sent[size_t(r)] = comm.bytesSent() - before;
      });
      uint64_t total = 0;
      for (size_t r = 0; r < P; ++r) {
        const long bad = firstMismatch(decode(data[r], dtype), source);
        QVERIFY2(bad < 0, qPrintable(QString("%1 n=%2 rank %3: first wrong element %4")
                                         .arg(name(dtype)).arg(n).arg(r).arg(bad)));
        total += sent[r];
      }
      // A chain: every rank but the last one sends the buffer once.
      QCOMPARE(total, uint64_t(P - 1) * n * dtypeSize(dtype));
    }
  }
}

void TestGlooCommunicator::barrier_data() {
  QTest::addColumn<int>("ranks");
  for (int p = 1; p <= 4; ++p) QTest::newRow(qPrintable(QString("P%1").arg(p))) << p;
}

void TestGlooCommunicator::barrier() {
  QFETCH(int, ranks);
  Group& group = groupOf(ranks);
  constexpr int kRounds = 5;
  std::atomic<int> arrived[kRounds] = {};
  std::atomic<int> early{0};  // ranks that left a barrier before all arrived
  runRanks(ranks, [&](int r) {
    for (int k = 0; k < kRounds; ++k) {
      // The last rank dawdles, so a barrier that does not wait is caught.
      if (r == ranks - 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      arrived[k].fetch_add(1);
      group[size_t(r)]->barrier();
      if (arrived[k].load() != ranks) early.fetch_add(1);
    }
  });
  QCOMPARE(early.load(), 0);
}

void TestGlooCommunicator::twoGroupsAtOnce() {
  // Two live groups (2 and 3 ranks) running collectives at the same time on 5
  // threads, then a third group reusing the first prefix while both still exist.
  Group a = createGlooGroup(2, "dp", 10000);
  Group b = createGlooGroup(3, "tp", 10000);
  const size_t n = 5000;
  std::vector<std::vector<float>> data(5, std::vector<float>(n));
  runRanks(5, [&](int t) {
    std::vector<float>& v = data[size_t(t)];
    for (size_t i = 0; i < n; ++i) v[i] = float(t + 1);
    for (int repeat = 0; repeat < 3; ++repeat) {
      if (t < 2) {
        a[size_t(t)]->allReduce(v.data(), n, DType::F32);
      } else {
        b[size_t(t - 2)]->allReduce(v.data(), n, DType::F32);
      }
    }
  });
  // Group a sums 1 + 2 = 3, three times: 3 * 2 * 2 = 12. Group b: 3 + 4 + 5 = 12, then x3 x3.
  for (int t = 0; t < 5; ++t) {
    QCOMPARE(data[size_t(t)][n - 1], t < 2 ? 12.0f : 108.0f);
  }
  Group again = createGlooGroup(2, "dp", 10000);
  std::vector<std::vector<float>> gathered(2, std::vector<float>(2));
  runRanks(2, [&](int r) {
    float v = float(r + 10);
    again[size_t(r)]->allGather(&v, gathered[size_t(r)].data(), 1, DType::F32);
  });
  for (const std::vector<float>& g : gathered) QCOMPARE(g, (std::vector<float>{10.0f, 11.0f}));
  QCOMPARE(a[0]->size(), 2);
  QCOMPARE(b[2]->rank(), 2);
  QCOMPARE(a[0]->backendName(), std::string("gloo"));
}

void TestGlooCommunicator::missingRankTimesOut() {
  // Rank 2 never joins the all-reduce: ranks 0 and 1 must throw, not hang.
  const int ranks = 3;
  Group group = createGlooGroup(ranks, "late-group", 300);
  std::vector<std::string> messages(ranks);
  std::vector<float> data(1000, 1.0f);
  std::vector<std::vector<float>> buffers(ranks, data);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        group[size_t(r)]->allReduce(buffers[size_t(r)].data(), data.size(), DType::F32);
      } catch (const std::runtime_error& e) {
        messages[size_t(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    const QString m = QString::fromStdString(messages[size_t(r)]);
    QVERIFY2(!m.isEmpty(), qPrintable(QString("rank %1 did not throw").arg(r)));
    QVERIFY2(m.contains("allReduce") && m.contains(QString("rank %1").arg(r)) &&
                 m.contains("late-group"),
             qPrintable(m));
  }
}

void TestGlooCommunicator::closedPeerThrows() {
  // Rank 1 is gone (its connections closed) before rank 0 sends: rank 0 must
  // throw a RunError naming the op and group, not hang or crash.
  Group group = createGlooGroup(2, "gone", 2000);
  group[1].reset();
  std::vector<float> data(100, 1.0f);
  try {
    group[0]->broadcast(data.data(), data.size(), DType::F32, 0);
    QFAIL("broadcast to a closed peer did not throw");
  } catch (const std::runtime_error& e) {
    const QString m = QString::fromUtf8(e.what());
    QVERIFY2(m.contains("broadcast") && m.contains("rank 0") && m.contains("'gone'"), qPrintable(m));
  }
}

void TestGlooCommunicator::sharedMemoryRingsFailCleanly() {
  // Thread ranks run the rings straight on each other's memory: ranks that
  // issue different collectives, a member that is gone and an abort each end
  // the call at once with an error that says which, never a hang or a read
  // of memory given back.
  {
    Group group = createGlooGroup(2, "mismatch", 10000);
    std::vector<std::string> messages(2);
    runRanks(2, [&](int r) {
      std::vector<float> v(1000, 1.0f), out(1000);
      try {
        if (r == 0) group[0]->allReduce(v.data(), 1000, DType::F32);
        else group[1]->allGather(v.data(), out.data(), 500, DType::F32);
      } catch (const std::runtime_error& e) {
        messages[size_t(r)] = e.what();
      }
    });
    for (const std::string& m : messages) {
      const QString text = QString::fromStdString(m);
      QVERIFY2(text.contains("different collectives") && text.contains("all-reduce of 1000 f32 elements") &&
                   text.contains("all-gather of 500 f32 elements"),
               m.c_str());
    }
  }
  {
    Group group = createGlooGroup(3, "gone-ring", 10000);
    group[2].reset();
    std::vector<std::string> messages(2);
    runRanks(2, [&](int r) {
      std::vector<float> v(3000, 1.0f);
      try {
        group[size_t(r)]->allReduce(v.data(), v.size(), DType::F32);
      } catch (const std::runtime_error& e) {
        messages[size_t(r)] = e.what();
      }
    });
    for (const std::string& m : messages)
      QVERIFY2(QString::fromStdString(m).contains("rank 2 closed its connections"), m.c_str());
  }
  {
    Group group = createGlooGroup(2, "aborted-ring", 10000);
    std::string message;
    std::thread caller([&] {
      std::vector<float> v(1000, 1.0f);
      try {
        group[0]->allReduce(v.data(), v.size(), DType::F32);  // rank 1 never comes
      } catch (const std::runtime_error& e) {
        message = e.what();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    group[0]->abort();
    caller.join();
    QVERIFY2(QString::fromStdString(message).contains("aborted (run stopped)"), message.c_str());
  }
}

void TestGlooCommunicator::rejectsBadArguments() {
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, createGlooGroup(0, "x", 1000));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, createGlooGroup(2, "x", 0));
  Group one = createGlooGroup(1, "solo", 1000);
  float v = 3.0f;
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, one[0]->broadcast(&v, 1, DType::F32, 1));
  one[0]->allReduce(&v, 1, DType::F32);
  one[0]->barrier();
  QCOMPARE(v, 3.0f);
  QCOMPARE(one[0]->bytesSent(), uint64_t(0));
  auto& gloo = dynamic_cast<GlooCommunicator&>(*groupOf(2)[0]);
  gloo.setSegmentBytes(8192);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, gloo.setSegmentBytes(63));
  QCOMPARE(gloo.segmentBytes(), size_t(8192));  // a refused size leaves the one before
  gloo.setSegmentBytes(GlooCommunicator::kDefaultSegmentBytes);
}

void TestGlooCommunicator::sharedMemoryAndTcpAgree() {
  // Thread ranks go through shared memory by default; the same rings over TCP
  // loopback must give the same bits and count the same bytes sent. bf16
  // all-reduce of an uneven count over several segments, then a reduce-scatter
  // and an all-gather, on 3 ranks, with values whose bf16 sums round.
  const int ranks = 3;
  qputenv("SHARDSCOPE_THREAD_TRANSPORT", "tcp");
  Group tcp = createGlooGroup(ranks, "agree-tcp", 10000);
  qunsetenv("SHARDSCOPE_THREAD_TRANSPORT");
  Group shm = createGlooGroup(ranks, "agree-shm", 10000);
  QCOMPARE(std::string(dynamic_cast<GlooCommunicator&>(*shm[0]).transportName()), std::string("shared memory"));
  QCOMPARE(std::string(dynamic_cast<GlooCommunicator&>(*tcp[0]).transportName()), std::string("tcp"));
  const size_t n = 10007, part = 4001;
  using Buffers = std::vector<std::vector<char>>;
  const auto run = [&](Group& g) {
    for (auto& c : g) dynamic_cast<GlooCommunicator&>(*c).setSegmentBytes(4096);
    Buffers out(ranks);
    runRanks(ranks, [&](int r) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = 1.0f + float((i * 7919 + size_t(r) * 104729) % 1000) / 997.0f;
      std::vector<char> ar = encode(v, DType::BF16);
      g[size_t(r)]->allReduce(ar.data(), n, DType::BF16);
      std::vector<float> full(part * ranks);
      for (size_t i = 0; i < full.size(); ++i) full[i] = float((i + size_t(r)) % 13) * 0.37f;
      std::vector<char> rs(part * 4);
      g[size_t(r)]->reduceScatter(full.data(), rs.data(), part, DType::F32);
      std::vector<char> ag(part * ranks * 4);
      g[size_t(r)]->allGather(rs.data(), ag.data(), part, DType::F32);
      out[size_t(r)] = ar;
      out[size_t(r)].insert(out[size_t(r)].end(), ag.begin(), ag.end());
    });
    for (auto& c : g) dynamic_cast<GlooCommunicator&>(*c).setSegmentBytes(GlooCommunicator::kDefaultSegmentBytes);
    return out;
  };
  const Buffers over_tcp = run(tcp), over_shm = run(shm);
  for (int r = 0; r < ranks; ++r) {
    QVERIFY2(over_tcp[size_t(r)] == over_shm[size_t(r)], qPrintable(QString("rank %1's results differ").arg(r)));
    QCOMPARE(shm[size_t(r)]->bytesSent(), tcp[size_t(r)]->bytesSent());
  }
  QVERIFY(shm[0]->bytesSent() > 0);
  // A value the transport switch does not know is refused by name.
  qputenv("SHARDSCOPE_THREAD_TRANSPORT", "rdma");
  try {
    createGlooGroup(2, "bad-transport", 1000);
    qunsetenv("SHARDSCOPE_THREAD_TRANSPORT");
    QFAIL("an unknown SHARDSCOPE_THREAD_TRANSPORT was accepted");
  } catch (const ConfigError& e) {
    qunsetenv("SHARDSCOPE_THREAD_TRANSPORT");
    QVERIFY2(QString(e.what()).contains("SHARDSCOPE_THREAD_TRANSPORT='rdma'"), e.what());
  }
}

QTEST_APPLESS_MAIN(TestGlooCommunicator)
#include "test_gloo_communicator.moc"
