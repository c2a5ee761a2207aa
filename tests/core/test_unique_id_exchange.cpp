// The bootstrap-token exchange of cross-process NCCL groups (ncclUniqueId
// through the rendezvous store), over a real FileStore and without a GPU: the
// first member's token reaches every other member, whichever starts first;
// groups of one run keep apart; a member whose first one never publishes fails
// within the timeout naming the group, key and store; a wrong-sized key is refused.
#include <QtTest>

#include <gloo/rendezvous/file_store.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/unique_id_exchange.h"
#include "common/errors.h"

using namespace shardscope;

namespace {

constexpr size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

std::vector<uint8_t> fakeId(uint8_t tag) {
  std::vector<uint8_t> id(kIdBytes);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(tag + i * 7);
  return id;
}

TokenExchange exchangeFor(const std::string& group, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  TokenExchange x;
  x.key = "run7/nccl/" + group;
  x.group = group;
  x.store_name = "file:///test";
  x.bytes = kIdBytes;
  x.timeout = timeout;
  return x;
}

}  // namespace

class TestUniqueIdExchange : public QObject {
  Q_OBJECT

 private slots:
  void firstMemberPublishesOthersRead_data() {
    QTest::addColumn<bool>("waiterFirst");
    QTest::newRow("publisher starts first") << false;
    QTest::newRow("waiters start first") << true;
  }

  void firstMemberPublishesOthersRead() {
    QFETCH(bool, waiterFirst);
    QTemporaryDir dir;
    gloo::rendezvous::FileStore store(dir.path().toStdString());
    std::atomic<int> generated{0};
    const auto generate = [&] {
      ++generated;
      return fakeId(42);
    };
    std::vector<std::vector<uint8_t>> got(3);
    std::vector<std::thread> members;
    auto member = [&](int group_rank) {
      members.emplace_back([&, group_rank] {
        // Each thread its own store object, as each process opens its own.
        gloo::rendezvous::FileStore own(dir.path().toStdString());
        got[static_cast<size_t>(group_rank)] = exchangeToken(own, exchangeFor("world"), group_rank == 0, generate);
      });
    };
    if (waiterFirst) {
      member(1);
      member(2);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      member(0);
    } else {
      member(0);
      member(1);
      member(2);
    }
    for (auto& t : members) t.join();
    QCOMPARE(generated.load(), 1);
    for (const auto& id : got) QVERIFY(id == fakeId(42));
    // What the store holds is the token, byte for byte.
    const std::vector<char> held = store.get("run7/nccl/world");
    QCOMPARE(held.size(), kIdBytes);
    QVERIFY(std::equal(held.begin(), held.end(), fakeId(42).begin(),
                       [](char a, uint8_t b) { return static_cast<uint8_t>(a) == b; }));
  }

  void groupsOfOneRunKeepApart() {
    QTemporaryDir dir;
    gloo::rendezvous::FileStore store(dir.path().toStdString());
    const auto a = exchangeToken(store, exchangeFor("shard0.gather"), true, [] { return fakeId(1); });
    const auto b = exchangeToken(store, exchangeFor("shard0.reduce"), true, [] { return fakeId(2); });
    QVERIFY(a != b);
    const auto never = [] {
      QTest::qFail("a waiting member must not make a token", __FILE__, __LINE__);
      return fakeId(9);
    };
    QVERIFY(exchangeToken(store, exchangeFor("shard0.gather"), false, never) == fakeId(1));
    QVERIFY(exchangeToken(store, exchangeFor("shard0.reduce"), false, never) == fakeId(2));
  }

  void missingFirstMemberTimesOutNamingGroupAndStore() {
    QTemporaryDir dir;
    gloo::rendezvous::FileStore store(dir.path().toStdString());
    const auto t0 = std::chrono::steady_clock::now();
    try {
      exchangeToken(store, exchangeFor("replica1", std::chrono::milliseconds(300)), false, [] { return fakeId(0); });
      QFAIL("waiting for a key nobody publishes must fail");
    } catch (const RunError& e) {
      const QString what = e.what();
      QVERIFY2(what.contains("group 'replica1'"), qPrintable(what));
      QVERIFY2(what.contains("run7/nccl/replica1"), qPrintable(what));
      QVERIFY2(what.contains("file:///test"), qPrintable(what));
      QVERIFY2(what.contains("did not publish its id within 300 ms"), qPrintable(what));
    }
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
  }

  void wrongSizesAreRefused() {
    QTemporaryDir dir;
    gloo::rendezvous::FileStore store(dir.path().toStdString());
    store.set("run7/nccl/world", std::vector<char>(5, 'x'));
    try {
      exchangeToken(store, exchangeFor("world"), false, [] { return fakeId(0); });
      QFAIL("a 5-byte key is no id");
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("holds 5 bytes, not the 128"), e.what());
    }
    try {
      exchangeToken(store, exchangeFor("tp0"), true, [] { return std::vector<uint8_t>(3); });
      QFAIL("a generator's 3 bytes are no id");
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("the token is 3 bytes, not 128"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestUniqueIdExchange)
#include "test_unique_id_exchange.moc"
