// A rank waiting in its rendezvous for a peer that never publishes stops
// waiting when its stop is set (the worker's SIGTERM), and otherwise keeps
// the inner store's timeout and values. A file:// store's job folder belongs
// to the job's account alone.
#include <QtTest>

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>

#include <unistd.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "comm/rendezvous_store.h"
#include "comm/stoppable_store.h"
#include "common/errors.h"

using namespace shardscope;

class TestStoppableStore : public QObject {
  Q_OBJECT

 private slots:
  void aStopEndsAWaitForAMissingKey() {
    QTemporaryDir dir;
    auto stopped = std::make_shared<std::atomic<bool>>(false);
    StoppableStore store(std::make_shared<gloo::rendezvous::FileStore>(dir.path().toStdString()), stopped);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stopped->store(true);
    });
    QElapsedTimer timer;
    timer.start();
    QString what;
    try {
      store.wait({"rank_3"}, std::chrono::seconds(30));
    } catch (const gloo::IoException& e) {
      what = QString::fromUtf8(e.what());
    }
    stopper.join();
    QVERIFY2(what.contains("stopped while waiting for the rendezvous key(s) rank_3"), qPrintable(what));
    QVERIFY2(timer.elapsed() < 10000, "the wait ran on to the inner store's timeout");
    // A get of a missing key is a wait too.
    QVERIFY_THROWS_EXCEPTION(gloo::IoException, store.get("rank_3"));
  }

  void aStopIsHeardWithinASliceOnAFileStore() {
    // The --rdzv file:// store: Gloo's FileStore waits in whole seconds, so
    // waiting in its own 50 ms slices heard a stop about a second late. Stopped
    // at 100 ms, the wait ends well before a second has passed.
    QTemporaryDir dir;
    auto stopped = std::make_shared<std::atomic<bool>>(false);
    StoppableStore store(openRendezvousStore("file://" + dir.path().toStdString(), "slices"), stopped);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stopped->store(true);
    });
    QElapsedTimer timer;
    timer.start();
    QVERIFY_THROWS_EXCEPTION(gloo::IoException, store.wait({"rank_1"}, std::chrono::seconds(30)));
    const qint64 elapsed = timer.elapsed();
    stopper.join();
    QVERIFY2(elapsed < 800, qPrintable(QString("the stop was heard after %1 ms").arg(elapsed)));
  }

  void withoutAStopTheInnerStoreAnswers() {
    QTemporaryDir dir;
    auto stopped = std::make_shared<std::atomic<bool>>(false);
    auto inner = std::make_shared<gloo::rendezvous::FileStore>(dir.path().toStdString());
    StoppableStore store(inner, stopped);
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));  // more than one wait slice
      inner->set("addr", {'o', 'k'});
    });
    store.wait({"addr"}, std::chrono::seconds(10));
    late.join();
    QCOMPARE(store.get("addr"), (std::vector<char>{'o', 'k'}));
    // The deadline still holds: the inner store's timeout error, not a stop.
    QString what;
    try {
      store.wait({"never"}, std::chrono::milliseconds(120));
    } catch (const gloo::IoException& e) {
      what = QString::fromUtf8(e.what());
    }
    QVERIFY2(!what.isEmpty() && !what.contains("stopped"), qPrintable(what));
  }

  // A file:// store's job folder is the job's own: made private, and refused
  // when another account made it first or a link stands in its place.
  void aJobFolderIsTheJobsOwn() {
    QTemporaryDir dir;
    const std::string url = "file://" + dir.path().toStdString();
    namespace fs = std::filesystem;
    const fs::path open_one = rendezvousJobDir(url, "open");
    fs::create_directories(open_one);
    fs::permissions(open_one, fs::perms::all);  // 0777: anyone could write keys
    openRendezvousStore(url, "open");
    QCOMPARE(fs::status(open_one).permissions() & fs::perms::mask, fs::perms::owner_all);
    const auto refusal = [&](const std::string& job) {
      try {
        openRendezvousStore(url, job);
      } catch (const RunError& e) {
        return QString::fromStdString(e.what());
      }
      return QString();
    };
    const fs::path linked = rendezvousJobDir(url, "linked");
    fs::create_directory_symlink(dir.path().toStdString(), linked);
    QVERIFY(refusal("linked").contains("is not a folder"));
    const fs::path theirs = rendezvousJobDir(url, "theirs");
    fs::create_directories(theirs);
    if (::chown(theirs.c_str(), 65534, 65534) != 0) QSKIP("chown to another account needs root here");
    const QString why = refusal("theirs");
    QVERIFY2(why.contains("belongs to another account (uid 65534)") && why.contains("--rdzv-id"), qPrintable(why));
  }
};

QTEST_GUILESS_MAIN(TestStoppableStore)
#include "test_stoppable_store.moc"
