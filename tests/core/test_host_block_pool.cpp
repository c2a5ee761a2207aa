// The event logs' block pool: aligned, distinct blocks from 2 MiB slabs,
// released blocks reused before any fresh memory is mapped, idle slabs given
// back past the cache bound, and resident bytes that follow what is touched.
#include <QtTest>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "common/host_block_pool.h"
#include "trace/event_log.h"

using namespace shardscope;

class TestHostBlockPool : public QObject {
  Q_OBJECT

 private slots:
  void blocksAreAlignedDistinctAndFromSlabs() {
    HostBlockPool pool;
    std::set<uintptr_t> seen;
    std::vector<void*> blocks;
    for (int i = 0; i < 10; ++i) {
      void* b = pool.allocate();
      QVERIFY(b);
      QCOMPARE(reinterpret_cast<uintptr_t>(b) % HostBlockPool::kBlockBytes, uintptr_t(0));
      QVERIFY(seen.insert(reinterpret_cast<uintptr_t>(b)).second);
      std::memset(b, 0xab, HostBlockPool::kBlockBytes);  // the whole block is writable
      blocks.push_back(b);
    }
    QCOMPARE(pool.stats().slabs, size_t(3));  // 4 blocks per 2 MiB slab
    QCOMPARE(pool.stats().free_blocks, size_t(2));
    for (void* b : blocks) pool.release(b);
    QCOMPARE(pool.stats().free_blocks, size_t(12));
  }

  void releasedBlocksAreReusedBeforeNewSlabs() {
    HostBlockPool pool;
    std::vector<void*> first;
    for (size_t i = 0; i < HostBlockPool::kBlocksPerSlab; ++i) first.push_back(pool.allocate());
    for (void* b : first) pool.release(b);
    std::set<void*> again;
    for (size_t i = 0; i < HostBlockPool::kBlocksPerSlab; ++i) again.insert(pool.allocate());
    QCOMPARE(again, std::set<void*>(first.begin(), first.end()));
    QCOMPARE(pool.stats().slabs, size_t(1));
  }

  void idleSlabsGoBackPastTheCacheBound() {
    HostBlockPool pool;
    const size_t blocks = 2 * HostBlockPool::kCachedBytes / HostBlockPool::kBlockBytes;
    std::vector<void*> held;
    for (size_t i = 0; i < blocks; ++i) held.push_back(pool.allocate());
    const size_t mapped = pool.stats().slabs;
    QCOMPARE(mapped, blocks / HostBlockPool::kBlocksPerSlab);
    for (void* b : held) pool.release(b);
    const HostBlockPool::Stats after = pool.stats();
    QVERIFY(after.free_blocks * HostBlockPool::kBlockBytes <= HostBlockPool::kCachedBytes);
    QVERIFY(after.slabs < mapped);
    QCOMPARE(after.slabs * HostBlockPool::kBlocksPerSlab, after.free_blocks);  // nothing in use, nothing lost
  }

  void residentBytesFollowTouches() {
    HostBlockPool pool;
    QCOMPARE(pool.residentBytes(), size_t(0));
    auto* b = static_cast<unsigned char*>(pool.allocate());
    const size_t untouched = pool.residentBytes();
    std::memset(b, 1, HostBlockPool::kBlockBytes);
    const size_t touched = pool.residentBytes();
    QVERIFY(touched >= untouched + HostBlockPool::kBlockBytes || touched == HostBlockPool::kSlabBytes);
    QVERIFY(touched <= HostBlockPool::kSlabBytes);
    pool.release(b);
  }

  void anEventLogChunkIsOneBlockAndComesBackForTheNextLog() {
    static_assert(sizeof(EventLog::Chunk) <= HostBlockPool::kBlockBytes);
    QVERIFY(sizeof(EventLog::Chunk) + sizeof(Event) > HostBlockPool::kBlockBytes);  // no block space wasted
    const size_t slabs_before = HostBlockPool::instance().stats().slabs;
    {
      EventLog log;
      Event e;
      for (size_t i = 0; i < 3 * EventLog::kChunkEvents; ++i) log.record(e);
      QCOMPARE(log.publishedCount(), 3 * EventLog::kChunkEvents);
    }
    const size_t slabs_after_first = HostBlockPool::instance().stats().slabs;
    {
      EventLog log;
      Event e;
      for (size_t i = 0; i < 3 * EventLog::kChunkEvents; ++i) log.record(e);
    }
    QVERIFY(slabs_after_first >= slabs_before);
    QCOMPARE(HostBlockPool::instance().stats().slabs, slabs_after_first);  // the second log mapped nothing
  }
};

QTEST_APPLESS_MAIN(TestHostBlockPool)
#include "test_host_block_pool.moc"
