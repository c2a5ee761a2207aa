// EventLog with several producing threads and readers at once: no event is
// lost or read twice, each thread's events keep its order, an index read once
// always means the same event, drops past capacity are counted, one thread
// records into several logs, a log created where a destroyed one lived starts
// empty, and threads that exit hand their buffers (and events) on.
#include <QtTest>

#include <atomic>
#include <latch>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "trace/event_log.h"

using namespace shardscope;

namespace {

// A producer's n-th event: `rank` names the producer, `op` the sequence number.
Event tagged(int producer, int n) {
  Event e;
  e.rank = static_cast<int16_t>(producer);
  e.op = n;
  e.begin_ns = n;
  e.end_ns = n + 1;
  e.bytes = producer * 1000003LL + n;  // both fields must travel together
  return e;
}

bool sameEvent(const Event& a, const Event& b) {
  return a.rank == b.rank && a.op == b.op && a.bytes == b.bytes && a.begin_ns == b.begin_ns;
}

// Each producer's events, in order, exactly once: 0, 1, ..., counts[p] - 1.
void expectEveryProducerInOrder(const std::vector<Event>& events, const std::vector<int>& counts) {
  std::vector<int> next(counts.size(), 0);
  for (const Event& e : events) {
    QVERIFY(e.rank >= 0 && static_cast<size_t>(e.rank) < counts.size());
    const size_t p = static_cast<size_t>(e.rank);
    QCOMPARE(e.op, next[p]);  // a loss, duplicate or reorder shows here
    QCOMPARE(e.bytes, e.rank * 1000003LL + e.op);
    ++next[p];
  }
  for (size_t p = 0; p < counts.size(); ++p) QCOMPARE(next[p], counts[p]);
}

#ifdef SHARDSCOPE_UNDER_SANITIZER
constexpr int kPerProducer = 40'000;
#else
constexpr int kPerProducer = 200'000;
#endif

}  // namespace

class TestEventLog : public QObject {
  Q_OBJECT

 private slots:
  void fiveProducersAndTwoReaders() {
    // A rank's host thread and four stream threads, the UI and a trace writer polling.
    constexpr int kProducers = 5;
    EventLog log;
    std::atomic<int> done{0};
    // No producer exits before all have recorded: an exited thread's buffer
    // goes to the next thread that records, and each is to keep its own here.
    std::latch all_recorded(kProducers);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
      producers.emplace_back([&, p] {
        for (int n = 0; n < kPerProducer; ++n) log.record(tagged(p, n));
        all_recorded.arrive_and_wait();
        done.fetch_add(1);
      });
    std::vector<std::vector<Event>> seen(2);
    std::vector<QString> failures(2);
    std::vector<std::thread> readers;
    for (size_t r = 0; r < 2; ++r)
      readers.emplace_back([&, r] {
        std::vector<Event>& mine = seen[r];
        size_t cursor = 0;
        int polls = 0;
        for (;;) {
          const bool last = done.load() == kProducers;  // read once more after the producers stop
          const size_t before = mine.size();
          cursor = log.readFrom(cursor, mine);
          if (cursor != mine.size()) failures[r] = "cursor is not the count of events read";
          if (mine.size() < before) failures[r] = "read went backwards";
          if (++polls % 16 == 0 && cursor > 0) {  // reread an older stretch: same events
            const size_t from = cursor / 2;
            std::vector<Event> again;
            log.readFrom(from, again);
            for (size_t i = 0; i + from < cursor; ++i)
              if (!sameEvent(again[i], mine[from + i])) failures[r] = QString("index %1 changed").arg(from + i);
          }
          if (last) break;
          std::this_thread::yield();
        }
      });
    for (std::thread& t : producers) t.join();
    for (std::thread& t : readers) t.join();
    for (const QString& f : failures) QVERIFY2(f.isEmpty(), qPrintable(f));

    const std::vector<int> counts(kProducers, kPerProducer);
    QCOMPARE(log.publishedCount(), size_t(kProducers) * kPerProducer);
    QCOMPARE(log.dropped(), uint64_t(0));
    QCOMPARE(log.bufferCount(), size_t(kProducers));
    const std::vector<Event> all = log.snapshot();
    expectEveryProducerInOrder(all, counts);
    for (const std::vector<Event>& mine : seen) {
      QCOMPARE(mine.size(), all.size());  // both readers saw one sequence
      for (size_t i = 0; i < all.size(); ++i) QVERIFY(sameEvent(mine[i], all[i]));
    }
    std::vector<Event> tail;
    QCOMPARE(log.readFrom(all.size(), tail), all.size());  // nothing new: the cursor stays
    QVERIFY(tail.empty());
    QCOMPARE(log.readFrom(all.size() + 7, tail), all.size() + 7);
    QVERIFY(tail.empty());
  }

  void readFromTheMiddleOfAChunk() {
    EventLog log;
    const int n = int(EventLog::kChunkEvents) * 2 + 100;
    for (int i = 0; i < n; ++i) {
      log.record(tagged(0, i));
      if (i % 1000 == 0) QCOMPARE(log.publishedCount(), size_t(i) + 1);  // merged in many runs
    }
    for (size_t from : {size_t(0), size_t(1), EventLog::kChunkEvents - 1, EventLog::kChunkEvents,
                        EventLog::kChunkEvents + 5, size_t(n) - 1}) {
      std::vector<Event> out{tagged(9, 9)};  // readFrom appends
      QCOMPARE(log.readFrom(from, out), size_t(n));
      QCOMPARE(out.size(), size_t(n) - from + 1);
      for (size_t i = 1; i < out.size(); ++i) QCOMPARE(out[i].op, int(from + i - 1));
    }
  }

  void dropsPastCapacityOneThread() {
    EventLog log(2);
    const size_t capacity = 2 * EventLog::kChunkEvents;
    for (size_t i = 0; i < capacity + 500; ++i) log.record(tagged(0, int(i)));
    QCOMPARE(log.publishedCount(), capacity);
    QCOMPARE(log.dropped(), uint64_t(500));
    expectEveryProducerInOrder(log.snapshot(), {int(capacity)});
  }

  // A collector files a remote rank's events in batches: across chunk ends,
  // in order, after single events of the same thread, and dropped past capacity.
  void batchesCrossChunksAndCapacity() {
    EventLog log(3);
    const int chunk = int(EventLog::kChunkEvents);
    log.record(tagged(0, 0));
    std::vector<Event> batch;
    for (int i = 1; i < 2 * chunk + 100; ++i) batch.push_back(tagged(0, i));
    log.record(batch.data(), batch.size());
    log.record(nullptr, 0);
    QCOMPARE(log.publishedCount(), size_t(2 * chunk + 100));
    batch.clear();
    for (int i = 2 * chunk + 100; i < 3 * chunk + 300; ++i) batch.push_back(tagged(0, i));
    log.record(batch.data(), batch.size());
    QCOMPARE(log.publishedCount(), size_t(3 * chunk));
    QCOMPARE(log.dropped(), uint64_t(300));
    expectEveryProducerInOrder(log.snapshot(), {3 * chunk});
  }

  void dropsPastCapacityManyThreads() {
    // Capacity is the log's as a whole: 3 chunks shared by 4 threads that each want 2.
    EventLog log(3);
    constexpr int kThreads = 4;
    const int each = 2 * int(EventLog::kChunkEvents);
    std::vector<std::thread> threads;
    for (int p = 0; p < kThreads; ++p)
      threads.emplace_back([&, p] {
        for (int n = 0; n < each; ++n) log.record(tagged(p, n));
      });
    for (std::thread& t : threads) t.join();
    const size_t kept = log.publishedCount();
    QCOMPARE(kept, 3 * EventLog::kChunkEvents);  // a thread asks for a chunk only when its own is full
    QCOMPARE(kept + log.dropped(), size_t(kThreads) * each);
    // What was kept of each thread is a prefix of what it recorded.
    std::vector<int> counts(kThreads, 0);
    for (const Event& e : log.snapshot()) ++counts[size_t(e.rank)];
    expectEveryProducerInOrder(log.snapshot(), counts);
  }

  void oneThreadIntoSeveralLogs() {
    // More logs than the thread's cache holds: each keeps its own sequence
    // and the thread keeps one buffer in each.
    constexpr int kLogs = 7;
    std::vector<std::unique_ptr<EventLog>> logs;
    for (int i = 0; i < kLogs; ++i) logs.push_back(std::make_unique<EventLog>());
    const int n = 3000;
    for (int i = 0; i < n; ++i)
      for (int l = 0; l < kLogs; ++l)
        if (i % (l + 1) == 0) logs[size_t(l)]->record(tagged(0, i / (l + 1)));
    for (int l = 0; l < kLogs; ++l) {
      QCOMPARE(logs[size_t(l)]->bufferCount(), size_t(1));
      expectEveryProducerInOrder(logs[size_t(l)]->snapshot(), {(n + l) / (l + 1)});
    }
    // Two logs, two threads each, interleaved.
    EventLog a, b;
    auto both = [&](int p) {
      for (int i = 0; i < 20'000; ++i) {
        a.record(tagged(p, i));
        if (i % 3 == 0) b.record(tagged(p, i / 3));
      }
    };
    std::thread t0(both, 0), t1(both, 1);
    t0.join();
    t1.join();
    expectEveryProducerInOrder(a.snapshot(), {20'000, 20'000});
    expectEveryProducerInOrder(b.snapshot(), {6667, 6667});
  }

  void logRecreatedAtTheSameAddress() {
    // The thread's cached buffer of the destroyed log must not match the new one.
    alignas(EventLog) static unsigned char storage[sizeof(EventLog)];
    auto* first = new (storage) EventLog;
    for (int i = 0; i < 100; ++i) first->record(tagged(0, i));
    QCOMPARE(first->publishedCount(), size_t(100));
    first->~EventLog();
    auto* second = new (storage) EventLog;
    QCOMPARE(static_cast<void*>(second), static_cast<void*>(first));
    QCOMPARE(second->publishedCount(), size_t(0));
    for (int i = 0; i < 10; ++i) second->record(tagged(1, i));
    QCOMPARE(second->bufferCount(), size_t(1));
    std::vector<int> counts{0, 10};
    expectEveryProducerInOrder(second->snapshot(), counts);
    second->~EventLog();

    // A thread alive across its log's end: its exit must not touch the old log,
    // and a log at the same address sees only its own events.
    std::atomic<int> stage{0};
    auto* third = new (storage) EventLog;
    std::thread t([&] {
      for (int i = 0; i < 50; ++i) third->record(tagged(0, i));
      stage = 1;
      while (stage.load() != 2) std::this_thread::yield();
      for (int i = 0; i < 5; ++i) third->record(tagged(1, i));  // now the fourth log
      stage = 3;
      while (stage.load() != 4) std::this_thread::yield();
    });
    while (stage.load() != 1) std::this_thread::yield();
    QCOMPARE(third->publishedCount(), size_t(50));
    third->~EventLog();
    auto* fourth = new (storage) EventLog;
    stage = 2;
    while (stage.load() != 3) std::this_thread::yield();
    expectEveryProducerInOrder(fourth->snapshot(), {0, 5});
    fourth->~EventLog();  // destroyed while the thread that recorded into it lives
    stage = 4;
    t.join();
  }

  void threadsThatExitHandTheirBuffersOn() {
    EventLog log;
    // Threads one after another (a rank's streams, run after run): one buffer
    // serves them all, and every event stays.
    constexpr int kSerial = 12;
    for (int p = 0; p < kSerial; ++p) {
      std::thread t([&, p] {
        for (int n = 0; n < 1000 + p; ++n) log.record(tagged(p, n));
      });
      t.join();
    }
    QCOMPARE(log.bufferCount(), size_t(1));
    std::vector<int> counts;
    for (int p = 0; p < kSerial; ++p) counts.push_back(1000 + p);
    expectEveryProducerInOrder(log.snapshot(), counts);

    // Threads starting and exiting while a reader polls: at most as many
    // buffers as threads alive at once.
    std::atomic<bool> stop{false};
    std::vector<Event> read;
    std::thread reader([&] {
      size_t cursor = 0;
      while (!stop.load()) cursor = log.readFrom(cursor, read);
      log.readFrom(cursor, read);
    });
    constexpr int kWaves = 6, kPerWave = 3;
    for (int w = 0; w < kWaves; ++w) {
      std::vector<std::thread> wave;
      for (int k = 0; k < kPerWave; ++k) {
        const int p = kSerial + w * kPerWave + k;
        wave.emplace_back([&, p] {
          for (int n = 0; n < 5000; ++n) log.record(tagged(p, n));
        });
        counts.push_back(5000);
      }
      for (std::thread& t : wave) t.join();
    }
    stop = true;
    reader.join();
    QVERIFY(log.bufferCount() <= size_t(kPerWave));
    expectEveryProducerInOrder(read, counts);
    QCOMPARE(log.dropped(), uint64_t(0));
  }
};

QTEST_APPLESS_MAIN(TestEventLog)
#include "test_event_log.moc"
