// What the window holds (issue 52 item 7): a folder of flight-recorder dumps
// is held once, by the ladder, not once by the opened set and again by the
// view, which made the window's peak twice `analyze`'s (a 36 MB folder of 64 dumps took 2.45 GB in the window against 0.47 GB
// in `analyze`); "Clear runs" lets the earlier runs go (their rows, traces and
// curves), where it only removed the curves and the window kept growing.
// Memory is read as the heap's bytes in use (glibc's mallinfo2), not as
// resident pages, so what the allocator keeps cached does not count.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "flight_recorder_import.h"
#include "ladder_view.h"
#include "loss_view.h"
#include "main_window.h"
#include "postmortem/flight_recorder.h"
#include "preset_run.h"
#include "run_files.h"
#include "run_history_model.h"

using namespace shardscope;

namespace {

#ifdef __GLIBC__
double heapInUseMiB() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}
#endif

QJsonObject frame(const QString& file, int line, const QString& name) {
  return QJsonObject{{QStringLiteral("filename"), file}, {QStringLiteral("line"), line}, {QStringLiteral("name"), name}};
}

// `ranks` dumps of `entries` completed all-reduces each (the last rank one
// short: a hang), every entry with an eight-frame stack, as a training loop's
// backward hook records it: the shape of a real job's folder.
void writeDumps(const QString& dir, int ranks, int entries) {
  QString members = QStringLiteral("[");
  for (int r = 0; r < ranks; ++r) members += (r ? QStringLiteral(", ") : QString()) + QString::number(r);
  members += QStringLiteral("]");
  const QJsonObject pg_config{{QStringLiteral("0"), QJsonObject{{QStringLiteral("name"), QStringLiteral("0")},
                                                                {QStringLiteral("desc"), QStringLiteral("default_pg")},
                                                                {QStringLiteral("ranks"), members}}}};
  for (int r = 0; r < ranks; ++r) {
    QJsonArray list;
    const int n = r == ranks - 1 ? entries - 1 : entries;
    for (int i = 0; i < n; ++i) {
      const qint64 created = 1700000000000000000LL + qint64(i + 1) * 1000000000LL + i;
      QJsonArray frames;
      frames.append(frame(QStringLiteral("torch/distributed/distributed_c10d.py"), 2696, QStringLiteral("all_reduce")));
      frames.append(frame(QStringLiteral("torch/distributed/c10d_logger.py"), 83, QStringLiteral("wrapper")));
      frames.append(frame(QStringLiteral("train.py"), 88 + i % 7, QStringLiteral("train_step")));
      frames.append(frame(QStringLiteral("torch/distributed/fsdp/_runtime_utils.py"), 700 + i % 5,
                          QStringLiteral("_post_backward_hook")));
      frames.append(frame(QStringLiteral("torch/autograd/graph.py"), 744, QStringLiteral("_engine_run_backward")));
      frames.append(frame(QStringLiteral("torch/_tensor.py"), 521, QStringLiteral("backward")));
      frames.append(frame(QStringLiteral("train.py"), 140, QStringLiteral("main")));
      frames.append(frame(QStringLiteral("train.py"), 160, QStringLiteral("<module>")));
      QJsonArray size;
      size.append(1024);
      QJsonArray sizes;
      sizes.append(size);
      QJsonArray dtypes;
      dtypes.append(QStringLiteral("Float"));
      QJsonArray group;
      group.append(QStringLiteral("0"));
      group.append(QStringLiteral("default_pg"));
      const bool done = i < entries - 1;
      list.append(QJsonObject{{QStringLiteral("record_id"), i},
                              {QStringLiteral("pg_id"), 0},
                              {QStringLiteral("process_group"), group},
                              {QStringLiteral("collective_seq_id"), i + 1},
                              {QStringLiteral("p2p_seq_id"), 0},
                              {QStringLiteral("op_id"), i},
                              {QStringLiteral("profiling_name"), QStringLiteral("nccl:all_reduce")},
                              {QStringLiteral("time_created_ns"), created},
                              {QStringLiteral("input_sizes"), sizes},
                              {QStringLiteral("input_dtypes"), dtypes},
                              {QStringLiteral("output_sizes"), sizes},
                              {QStringLiteral("output_dtypes"), dtypes},
                              {QStringLiteral("state"), done ? QStringLiteral("completed") : QStringLiteral("started")},
                              {QStringLiteral("time_discovered_started_ns"), created + 1000000},
                              {QStringLiteral("time_discovered_completed_ns"), done ? created + 2000000 : 0},
                              {QStringLiteral("retired"), done},
                              {QStringLiteral("timeout_ms"), 600000},
                              {QStringLiteral("is_p2p"), false},
                              {QStringLiteral("thread_id"), QStringLiteral("1")},
                              {QStringLiteral("thread_name"), QStringLiteral("pt_main_thread")},
                              {QStringLiteral("frames"), frames}});
    }
    // Keys come out sorted, as PyTorch's JSON dump writes them: comm_lib_version first (the window sniffs for it).
    const QJsonObject dump{{QStringLiteral("version"), QStringLiteral("2.10")},
                           {QStringLiteral("comm_lib_version"), QStringLiteral("2.21.5")},
                           {QStringLiteral("pg_config"), pg_config},
                           {QStringLiteral("entries"), list}};
    QFile f(dir + QStringLiteral("/nccl_trace_rank_%1.json").arg(r));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(dump).toJson(QJsonDocument::Compact));
  }
}

void settle() {
  for (int i = 0; i < 5; ++i) {
    QCoreApplication::processEvents();
    QTest::qWait(20);
  }
}

}  // namespace

class TestWindowMemory : public QObject {
  Q_OBJECT

 private slots:
  void openedDumpsAreHeldOnce() {
#ifndef __GLIBC__
    QSKIP("reads the heap's bytes in use through glibc's mallinfo2");
#else
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    writeDumps(dir.path(), 16, 2000);
    if (QTest::currentTestFailed()) return;
    // What the dumps themselves take, read as `analyze` reads them.
    double dumps_mib = 0;
    {
      const double before = heapInUseMiB();
      const std::vector<postmortem::FrRankDump> dumps = postmortem::readFlightRecorderDumps({dir.path().toStdString()});
      QCOMPARE(dumps.size(), size_t(16));
      dumps_mib = heapInUseMiB() - before;
    }
    QVERIFY2(dumps_mib > 8, qPrintable(QString::number(dumps_mib)));  // big enough to tell one copy from two
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    settle();
    const void* opened = nullptr;  // the dumps the window read
    QObject::connect(w.files(), &RunFiles::flightRecorderOpened, &w,
                     [&opened](std::shared_ptr<const FlightRecorderSet> set) { opened = &set->dumps; });
    const double before = heapInUseMiB();
    QString error;
    QVERIFY2(w.openTrace(dir.path(), &error), qPrintable(error));
    settle();
    const double window_mib = heapInUseMiB() - before;
    auto* view = w.findChild<LadderView*>();
    QVERIFY(view);
    // The ladder draws the very dumps that were read: no second copy, even for a moment.
    QVERIFY(opened);
    QCOMPARE(static_cast<const void*>(view->dumps().get()), opened);
    QCOMPARE(view->ladder().ranks.size(), size_t(16));
    QVERIFY(view->ladder().mismatch_row >= 0);
    // What stays is one copy and the ladder's cells: 16 dumps of 2000 entries
    // are about 30 MiB.
    QVERIFY2(window_mib < 1.5 * dumps_mib,
             qPrintable(QStringLiteral("the window holds %1 MiB for dumps of %2 MiB").arg(window_mib).arg(dumps_mib)));
    // Another run shown (or nothing): the dumps go with it.
    const std::weak_ptr<const std::vector<postmortem::FrRankDump>> held = view->dumps();
    QVERIFY(!held.expired());
    runFromArgs(w, {"--backend", "meta", "--ranks", "2", "--steps", "2", "--layers", "2", "--hidden", "32"});
    if (QTest::currentTestFailed()) return;
    w.showView(QStringLiteral("ladder"));
    settle();
    QVERIFY(held.expired());
#endif
  }

  void clearRunsLetsTheEarlierRunsGo() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1600, 1000);
    w.show();
    // Two runs with losses (curves) and two on the meta backend (rows only).
    const std::vector<std::string> real = {"--ranks", "2", "--steps", "3", "--layers", "2", "--hidden", "32", "--batch", "8"};
    std::vector<std::string> meta = real;
    meta.insert(meta.begin(), {"--backend", "meta"});
    runFromArgs(w, real);
    runFromArgs(w, meta);
    runFromArgs(w, real);
    runFromArgs(w, meta);
    if (QTest::currentTestFailed()) return;
    RunHistoryModel* history = w.history();
    QCOMPARE(history->runCount(), 4);
    QCOMPARE(w.lossView()->runCount(), 2);
    std::vector<std::weak_ptr<const RunTrace>> traces;
    for (int i = 0; i < history->runCount(); ++i) traces.push_back(history->run(i).trace);
    const QString shown = history->run(3).label;  // the last run is on screen
    QCOMPARE(w.inspection().run().historyRow, 3);
    auto* clear = w.lossView()->findChild<QPushButton*>(QStringLiteral("clearLossRuns"));
    QVERIFY(clear);
    QVERIFY(clear->isEnabled());
    clear->click();
    settle();
    // The run on screen keeps its row (the views read its result from it); the others are gone with their traces.
    QCOMPARE(history->runCount(), 1);
    QCOMPARE(history->run(0).label, shown);
    QCOMPARE(w.inspection().run().historyRow, 0);
    QCOMPARE(w.lossView()->runCount(), 0);
    for (int i = 0; i < 3; ++i) QVERIFY2(traces[static_cast<size_t>(i)].expired(), qPrintable(QString::number(i)));
    QVERIFY(!traces[3].expired());
    // Still enabled: the row on screen can go too, on a second press.
    QVERIFY(clear->isEnabled());
    // The next run gets its row after it.
    runFromArgs(w, meta);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(history->runCount(), 2);
    QCOMPARE(w.inspection().run().historyRow, 1);
  }
};

QTEST_MAIN(TestWindowMemory)
#include "test_window_memory.moc"
