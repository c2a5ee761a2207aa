// File ▸ Open trace with a trace built to hurt: one event at step 2^31-1,
// metadata.ranks 32768 with bucket 32767, an index or a time past its limit,
// a FIFO, a symlink to /dev/zero. Each either opens (every page built, in
// bounded time) or is refused with one error naming the file; the window never
// aborts and stays usable. The walkthrough's model maps steps densely too.
#include <QElapsedTimer>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include <sys/stat.h>
#include <unistd.h>

#include <limits>

#include "buckets_view.h"
#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "main_window.h"
#include "timeline_view.h"
#include "walkthrough_model.h"

using namespace shardscope;

namespace {

std::string trace(const std::string& events, const std::string& metadata) {
  return "{\"traceEvents\":[" + events + "],\"metadata\":{\"format\":\"shardscope-trace\",\"version\":1," + metadata + "}}";
}

std::string instant(const std::string& cat, int pid, const std::string& args, const std::string& ts = "1") {
  return "{\"ph\":\"i\",\"name\":\"" + cat + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":0,\"ts\":" + ts + ",\"s\":\"t\",\"args\":{" + args + "}}";
}

std::string box(const std::string& cat, int pid, int tid, const std::string& ts, const std::string& dur, const std::string& args) {
  return "{\"ph\":\"X\",\"name\":\"" + cat + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + ts + ",\"dur\":" + dur + ",\"args\":{" + args + "}}";
}

QString write(const QTemporaryDir& dir, const QString& name, const std::string& text) {
  const QString path = dir.filePath(name);
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(text.data(), static_cast<qint64>(text.size()));
  return path;
}

// One step of a ddp rank: step_begin, forward, loss, backward, bucket ready, all-reduce, step_end.
std::string ddpStep(int rank, const std::string& step) {
  const std::string s = "\"step\":" + step;
  return instant("step_begin", rank, s, "1") + "," + box("forward", rank, 1, "2", "3", s + ",\"block\":0") + "," +
         box("loss", rank, 1, "5", "1", s) + "," + box("backward", rank, 1, "6", "4", s + ",\"block\":0") + "," +
         instant("bucket_ready", rank, s + ",\"bucket\":32767", "9") + "," +
         box("all_reduce", rank, 2, "9", "2", s + ",\"bucket\":32767,\"bytes\":64,\"group\":0") + "," +
         box("optimizer_step", rank, 1, "11", "1", s) + "," + instant("step_end", rank, s, "12");
}

}  // namespace

class TestOpenTraceLimits : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_open_trace_limits"));
  }

  void hurtfulTracesOpenOrAreRefused_data() {
    QTest::addColumn<QByteArray>("json");
    // 1: opens; 0: refused; -1: opens, or is refused with one error (a page
    // that still cannot hold it says so): either way the window lives on.
    QTest::addColumn<int>("opens");
    QTest::addColumn<QString>("needle");  // in the error, when refused
    const auto bytes = [](const std::string& s) { return QByteArray::fromStdString(s); };
    QTest::newRow("step 20,000,000") << bytes(trace(ddpStep(0, "20000000"), R"("strategy":"ddp","ranks":1)")) << -1 << "";
    QTest::newRow("step int32 max") << bytes(trace(ddpStep(0, "2147483647"), R"("strategy":"ddp","ranks":1)")) << -1 << "";
    QTest::newRow("32768 ranks, bucket 32767")
        << bytes(trace(ddpStep(0, "0") + "," + ddpStep(32767, "0"),
                       R"("strategy":"ddp","ranks":32768,"buckets":[{"index":32767,"bytes":64}])"))
        << 1 << "";
    QTest::newRow("bucket index 70000") << bytes(trace(ddpStep(0, "0"), R"("strategy":"ddp","ranks":1,"buckets":[{"index":70000,"bytes":64}])"))
                                        << 0 << "metadata.buckets[0].index";
    QTest::newRow("ts 9e15 + dur 9e15") << bytes(trace(box("forward", 0, 1, "9e15", "9e15", "\"step\":0"), R"("ranks":1)"))
                                        << 0 << "traceEvents[0].ts";
    QTest::newRow("negative dur") << bytes(trace(box("forward", 0, 1, "5", "-3", "\"step\":0"), R"("ranks":1)")) << 0
                                  << "traceEvents[0].dur: expected a duration >= 0";
    QTest::newRow("repeated key") << bytes(trace(box("forward", 0, 1, "5", "3", "\"step\":0,\"step\":7"), R"("ranks":1)"))
                                  << 0 << "traceEvents[0].args.step: appears twice";
  }

  void hurtfulTracesOpenOrAreRefused() {
    QFETCH(QByteArray, json);
    QFETCH(int, opens);
    QFETCH(QString, needle);
    QTemporaryDir dir;
    const QString path = write(dir, QStringLiteral("hurt.trace.json"), json.toStdString());
    QVERIFY(!path.isEmpty());
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1200, 800);
    w.show();
    QString error;
    QElapsedTimer timer;
    timer.start();
    const bool ok = w.openTrace(path, &error);
    if (opens >= 0) QVERIFY2(ok == (opens == 1), qPrintable(ok ? QStringLiteral("it opened") : error));
    if (ok) {
      QVERIFY2(error.isEmpty(), qPrintable(error));
      QVERIFY(w.store().eventCount() > 0);
      // Every page paints what it was given.
      w.timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
      w.bucketsView()->plot()->replot(QCustomPlot::rpImmediateRefresh);
      QCoreApplication::processEvents();
      QVERIFY(w.timeline()->layout().stepStarts().size() == 1);
      QCOMPARE(w.bucketsView()->activity().bucketCount(), 1);
      QCOMPARE(w.bucketsView()->activity().bucketId(0), 32767);
    } else {
      QVERIFY2(error.contains(QStringLiteral("hurt.trace.json")), qPrintable(error));
      QVERIFY2(error.contains(needle), qPrintable(error));
      QVERIFY(!error.contains(QLatin1Char('\n')));  // one message
      QCOMPARE(w.store().eventCount(), size_t{0});  // nothing half-shown
    }
    QVERIFY2(timer.elapsed() < 60000, qPrintable(QString::number(timer.elapsed())));
    // The window is still usable: a good trace opens after the bad one.
    const QString good = write(dir, QStringLiteral("good.trace.json"), trace(ddpStep(0, "0"), R"("strategy":"ddp","ranks":1)"));
    QVERIFY2(w.openTrace(good, &error), qPrintable(error));
    QCOMPARE(w.timeline()->layout().stepStarts().front().step, 0);
  }

  // A FIFO or a symlink to /dev/zero is refused before a byte is read (it would never end).
  void nonRegularFilesAreRefused() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("pipe.json"));
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const QString zero = dir.filePath(QStringLiteral("zero.json"));
    QCOMPARE(::symlink("/dev/zero", zero.toLocal8Bit().constData()), 0);
    MainWindow w;
    w.setPersistSettings(false);
    for (const QString& path : {fifo, zero, dir.path()}) {
      QString error;
      QElapsedTimer timer;
      timer.start();
      QVERIFY(!w.openTrace(path, &error));
      QVERIFY2(error.contains(path), qPrintable(error));
      QVERIFY2(error.contains(QStringLiteral("not a regular file")) || error.contains(QStringLiteral("is a directory")),
               qPrintable(error));
      QVERIFY(timer.elapsed() < 5000);
    }
  }

  // A file no reader takes: the window says what core's detectInput saw and
  // what it opens (one line), and the run on screen stays as it was.
  void unknownFileSaysWhatWasSeen() {
    QTemporaryDir dir;
    const QString notes = write(dir, QStringLiteral("notes.txt"), "hello\n");
    QVERIFY(!notes.isEmpty());
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY(!w.openTrace(notes, &error));
    QVERIFY2(error.startsWith(notes + QStringLiteral(": starts with 'h'")), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("ShardScope opens PyTorch profiler traces")), qPrintable(error));
    QVERIFY(!error.contains(QLatin1Char('\n')));
    // Several files together must be one rank each of one kind: the odd one is named.
    const QString good = write(dir, QStringLiteral("good.trace.json"), trace(ddpStep(0, "0"), R"("strategy":"ddp","ranks":1)"));
    QVERIFY(!w.openFiles({good, good}, &error));
    QVERIFY2(error.startsWith(good + QStringLiteral(" is a ShardScope trace; several files open together only")), qPrintable(error));
  }

  // The walkthrough's steps once were an array indexed by the step number.
  void walkthroughMapsStepsDensely() {
    EventStore store;
    RunTrace meta;
    meta.strategy = "ddp";
    meta.ranks = 1;
    store.reset(meta);
    constexpr int32_t kStep = std::numeric_limits<int32_t>::max();
    std::vector<Event> events;
    const auto add = [&](EventKind kind, Lane lane, int64_t b, int64_t e, int32_t step) {
      Event ev;
      ev.kind = kind;
      ev.lane = lane;
      ev.begin_ns = b;
      ev.end_ns = e;
      ev.step = step;
      ev.rank = 0;
      events.push_back(ev);
    };
    add(EventKind::StepBegin, Lane::Host, 100, 100, kStep);
    add(EventKind::Forward, Lane::Compute, 110, 200, kStep);
    add(EventKind::Loss, Lane::Compute, 200, 210, kStep);
    add(EventKind::Backward, Lane::Compute, 210, 300, kStep);
    add(EventKind::StepEnd, Lane::Host, 400, 400, kStep);
    add(EventKind::StepBegin, Lane::Host, 10, 10, -1);  // a step_begin without a step: ignored, never an index
    store.appendEvents(0, events);
    WalkthroughModel model;
    model.sync(store);
    QCOMPARE(model.stepAt(150), kStep);
    QCOMPARE(model.stepAt(50), -1);
    QVERIFY(!model.litAt(150).empty());
    QVERIFY(!model.litAt(250).empty());
    QVERIFY(model.litAt(std::numeric_limits<int64_t>::max()).empty());
  }
};

QTEST_MAIN(TestOpenTraceLimits)
#include "test_open_trace_limits.moc"
