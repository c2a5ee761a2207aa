// A PyTorch profiler job in the window: the 4-rank FSDP fixture
// (tests/data/kineto/fsdp_job) opened as a folder shows per rank a row per
// GPU stream and CPU thread (threads collapsible), kernel tooltips with their
// own names and busbw, launch -> kernel arrows, allocated and reserved memory,
// the communication view over the last-but-one profiler step, and the pages
// that cannot apply say why. A ShardScope trace opened afterwards is unchanged.
#include <QComboBox>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <qcustomplot.h>

#include "comm_stats_model.h"
#include "comm_view.h"
#include "experiment_panel.h"
#include "inspect/timeline_layout.h"
#include "main_window.h"
#include "memory_view.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

const QString kJob = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/fsdp_job");

int32_t firstOf(const std::vector<Event>& events, EventKind kind) {
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].kind == kind) return static_cast<int32_t>(i);
  return -1;
}

// The fixture job in a window of the default figure size.
bool openJob(MainWindow& w, QString* error) {
  w.resize(1600, 1000);
  return w.openTrace(kJob, error);
}

}  // namespace

class TestKinetoViews : public QObject {
  Q_OBJECT

 private slots:
  void timelineRowsPerStreamAndThread() {
    MainWindow w;
    QString error;
    QVERIFY2(openJob(w, &error), qPrintable(error));
    auto* timeline = w.findChild<TimelineView*>();
    QVERIFY(timeline);
    timeline->refresh();
    const auto& rows = timeline->layout().rows();
    QCOMPARE(rows.size(), size_t(4 * 5));  // 3 GPU streams + 2 CPU threads per rank
    QCOMPARE(timeline->rowTitle(rows[0].rank, rows[0].lane), QStringLiteral("stream 7"));
    QCOMPARE(timeline->rowTitle(rows[1].rank, rows[1].lane), QStringLiteral("stream 20 · NCCL"));
    QCOMPARE(timeline->rowTitle(rows[4].rank, rows[4].lane), QStringLiteral("thread 4200 (pt_autograd_0)"));
    QVERIFY(timeline->layout().hasHostTracks());
    timeline->setShowCpuThreads(false);
    QCOMPARE(timeline->layout().rows().size(), size_t(4 * 3));
    QTest::keyClick(timeline, Qt::Key_H);  // H shows them again
    QCOMPARE(timeline->layout().rows().size(), size_t(4 * 5));

    const std::vector<Event>& events = w.inspection().store().events(0);
    const int32_t gather = firstOf(events, EventKind::AllGather);
    QVERIFY(gather >= 0);
    const QString tip = timeline->eventTooltip(0, gather);
    QVERIFY2(tip.contains(QStringLiteral("ncclDevKernel_AllGather_RING_LL")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("busbw")) && tip.contains(QStringLiteral("4 ranks")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("stream 20 · NCCL")), qPrintable(tip));
    // A forward GEMM: selected, it draws its outline and the arrow from its launch.
    const int32_t gemm = firstOf(events, EventKind::Forward);
    QVERIFY(gemm >= 0);
    timeline->selectEvent(0, gemm);
    QCOMPARE(timeline->arrowCount(), 2);
    QVERIFY(timeline->eventTooltip(0, gemm).contains(QStringLiteral("sm90_xmma_gemm")));
  }

  void memoryAllocatedAndReserved() {
    MainWindow w;
    QString error;
    QVERIFY2(openJob(w, &error), qPrintable(error));
    auto* memory = w.findChild<MemoryView*>();
    QVERIFY(memory);
    memory->refresh(true);
    bool reserved = false, unattributed = false;
    QCustomPlot* plot = memory->timePlot();
    for (int i = 0; i < plot->plottableCount(); ++i) {
      QCPAbstractPlottable* p = plot->plottable(i);
      if (!plot->legend->hasItemWithPlottable(p)) continue;
      reserved = reserved || (p->name().startsWith(QStringLiteral("reserved")) && p->interface1D()->dataCount() > 0);
      unattributed = unattributed || p->name().startsWith(QStringLiteral("unattributed"));
    }
    QVERIFY(reserved);
    QVERIFY(unattributed);
    // The bars at the peak allocated: 3 GiB before the window plus what the step held.
    const auto bytes = memory->barBytes(0);
    int64_t total = 0;
    for (int64_t b : bytes) total += b;
    QVERIFY(total > int64_t(3'221'225'472));
    QVERIFY(bytes[static_cast<size_t>(Category::Gathered)] > 0);
  }

  // One rank's file of a larger job: the ranks it has are the only ones the
  // memory view lists or draws a column for (nothing folds into "same as
  // rank 0" from ranks that are not there), and every text says which rank of
  // how many it is (issue 32).
  void oneRanksFileShowsItsRanksOnly() {
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/rank1_of_2.json"), &error),
             qPrintable(error));
    auto* rank = w.memoryView()->findChild<QComboBox*>(QStringLiteral("memoryRank"));
    QVERIFY(rank);
    const auto check = [&](int r, const QString& ranks_text) {
      w.memoryView()->refresh(true);
      QCOMPARE(QString::fromStdString(w.inspection().store().meta().ranksText()), ranks_text);
      QCOMPARE(rank->count(), 1);
      QCOMPARE(rank->itemText(0), QStringLiteral("rank %1").arg(r));
      QCOMPARE(rank->itemData(0).toInt(), r);
      for (const char* name : {"memoryBars", "commBytes"}) {
        auto* plot = w.findChild<QCustomPlot*>(QString::fromLatin1(name));
        QVERIFY(plot);
        if (QString::fromLatin1(name) == QStringLiteral("commBytes")) {
          w.showView(QStringLiteral("comm"));
          QCoreApplication::processEvents();
        }
        const auto ticker = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
        if (!ticker || ticker->ticks().isEmpty()) continue;  // no step completed: no columns at all
        QCOMPARE(ticker->ticks().values(), QList<QString>{QStringLiteral("rank %1").arg(r)});
      }
      bool said = false;
      for (const QLabel* label : w.experimentPanel()->findChildren<QLabel*>()) said = said || label->text().contains(ranks_text);
      QVERIFY2(said, qPrintable(ranks_text));
    };
    check(1, QStringLiteral("rank 1 of 2"));
    // Rank 34 of a 300-rank job: before, its memory chart had columns "0" and
    // "ranks 1–33: same as rank 0" for 34 ranks the file does not have.
    QFile in(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/rank1_of_2.json"));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QByteArray json = in.readAll();
    json.replace("\"rank\": 1, \"world_size\": 2", "\"rank\": 34, \"world_size\": 300");
    QTemporaryDir dir;
    QFile out(dir.filePath(QStringLiteral("rank34.json")));
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(json) == json.size());
    out.close();
    QVERIFY2(w.openTrace(out.fileName(), &error), qPrintable(error));
    check(34, QStringLiteral("rank 34 of 300"));
    // A whole job afterwards: every rank listed as itself.
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    w.memoryView()->refresh(true);
    QCOMPARE(rank->itemText(0), QStringLiteral("rank 0"));
    QVERIFY(rank->count() > 1);
  }

  // Issue 50: one file of rank 3 (of 4), five profiler steps and no [memory]
  // events: the communication view measures its last-but-one step (it said the
  // trace had no profiler step), and the memory view says there are no memory
  // samples instead of empty axes and "allocated 0.00 MiB".
  void rankThreeAloneWithoutMemorySamples() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("rank3.json"));
    {
      std::ofstream f(path.toStdString());
      f << "{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 4}, \"traceEvents\": [";
      for (int s = 0; s < 5; ++s) {
        const int t = 1000 + 1000 * s;
        f << (s ? ",\n" : "\n") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << s
          << "\", \"pid\": 5, \"tid\": 5, \"ts\": " << t << ", \"dur\": 900},\n"
          << "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 5, \"tid\": 5, \"ts\": "
          << t + 10 << ", \"dur\": 50, \"args\": {\"Collective name\": \"allreduce\", \"dtype\": \"Float\", "
          << "\"In msg nelems\": 1024, \"Out msg nelems\": 1024, \"Group size\": 4, \"Process Group Name\": \"0\", "
          << "\"Process Group Ranks\": \"[0, 1, 2, 3]\"}},\n"
          << "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 5, \"tid\": 5, \"ts\": "
          << t + 20 << ", \"dur\": 5, \"args\": {\"correlation\": " << s + 1 << "}},\n"
          << "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\", \"pid\": 0, "
          << "\"tid\": 7, \"ts\": " << t + 100 << ", \"dur\": 300, \"args\": {\"stream\": 7, \"correlation\": " << s + 1
          << "}}";
      }
      f << "]}\n";
    }
    MainWindow w;
    w.setPersistSettings(false);
    QString error;
    QVERIFY2(w.openTrace(path, &error), qPrintable(error));
    auto* comm = w.findChild<CommView*>();
    QVERIFY(comm);
    QCOMPARE(comm->model()->step(), 3);  // ProfilerStep#0..4: the last left out, as HTA does
    QVERIFY2(w.figureUnavailable(QStringLiteral("comm")).isEmpty(), qPrintable(w.figureUnavailable(QStringLiteral("comm"))));
    QVERIFY2(w.figureUnavailable(QStringLiteral("memory")).contains(QStringLiteral("no memory samples")),
             qPrintable(w.figureUnavailable(QStringLiteral("memory"))));
    w.memoryView()->refresh(true);
    auto* summary = w.memoryView()->findChild<QLabel*>(QStringLiteral("memorySummary"));
    QVERIFY(summary);
    QVERIFY2(summary->text().contains(QStringLiteral("no memory samples")), qPrintable(summary->text()));
  }

  void communicationOverTheLastButOneStep() {
    MainWindow w;
    QString error;
    QVERIFY2(openJob(w, &error), qPrintable(error));
    auto* comm = w.findChild<CommView*>();
    QVERIFY(comm);
    const CommStatsModel* model = comm->model();
    QCOMPARE(model->step(), 11);  // ProfilerStep#10..12: the last is left out, as HTA does
    int gathers = 0;
    for (const CommStatsModel::Row& row : model->statRows())
      if (row.rank == 0 && row.kind == EventKind::AllGather) gathers = row.ops;
    QCOMPARE(gathers, 7);
    QCOMPARE(model->timing().size(), size_t(4));
    for (const auto& t : model->timing()) {
      QVERIFY(t.comm_ns > 0);
      QVERIFY(t.exposed_ns >= 0 && t.exposed_ns <= t.comm_ns);
    }
    QVERIFY(w.figureUnavailable(QStringLiteral("comm")).isEmpty());
    QVERIFY(w.figureUnavailable(QStringLiteral("timeline")).isEmpty());
    QVERIFY(w.figureUnavailable(QStringLiteral("memory")).isEmpty());
    QVERIFY(w.figureUnavailable(QStringLiteral("buckets")).contains(QStringLiteral("PyTorch profiler trace")));
    QVERIFY(w.figureUnavailable(QStringLiteral("units")).contains(QStringLiteral("PyTorch profiler trace")));
    QVERIFY(w.figureUnavailable(QStringLiteral("loss")).contains(QStringLiteral("no losses")));
    QTemporaryDir dir;
    for (const QString& view : {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("comm")}) {
      const QString out = dir.filePath(view + QStringLiteral(".png"));
      QVERIFY2(w.exportViewFigure(view, out, 1280, 720, &error), qPrintable(error));
      QVERIFY(QFileInfo(out).size() > 10000);
    }
  }

  // An older trace sizes collectives by their ops' Input Dims: a size it
  // cannot derive reads "unknown" in the table, not 0 MiB; text-named GPU
  // streams ("stream 16") are not named twice.
  void unknownSizesSayUnknown() {
    MainWindow w;
    w.resize(1600, 1000);
    QString error;
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/input_dims_only.json"), &error),
             qPrintable(error));
    auto* comm = w.findChild<CommView*>();
    QVERIFY(comm);
    const CommStatsModel* model = comm->model();
    bool all_reduce = false, reduce_scatter = false;
    for (int i = 0; i < model->rowCount(); ++i) {
      const CommStatsModel::Row& row = model->statRows()[static_cast<size_t>(i)];
      const QString sent = model->data(model->index(i, CommStatsModel::Sent)).toString();
      QCOMPARE(model->data(model->index(i, CommStatsModel::Expected)).toString(), QStringLiteral("–"));  // no strategy, no formula
      if (row.kind == EventKind::AllReduce) {
        all_reduce = true;
        QCOMPARE(row.unsized, 0);
        QCOMPARE(sent, QStringLiteral("7.82"));  // 2,049,000 floats x ring factor 2(n-1)/n = 1 (2 ranks)
      } else if (row.kind == EventKind::ReduceScatter) {
        reduce_scatter = true;
        QCOMPARE(row.unsized, row.ops);
        QCOMPARE(sent, QStringLiteral("unknown"));
      }
    }
    QVERIFY(all_reduce && reduce_scatter);
    auto* timeline = w.findChild<TimelineView*>();
    QVERIFY(timeline);
    timeline->refresh();
    const auto& rows = timeline->layout().rows();
    QVERIFY(!rows.empty());
    QCOMPARE(timeline->rowTitle(rows[0].rank, rows[0].lane), QStringLiteral("stream 16 · NCCL"));
    // The tooltip says so too, where a sized collective gives its bytes.
    const std::vector<Event>& events = w.inspection().store().events(0);
    const int32_t scatter = firstOf(events, EventKind::ReduceScatter);
    const int32_t reduce = firstOf(events, EventKind::AllReduce);
    QVERIFY(scatter >= 0 && reduce >= 0);
    QVERIFY2(timeline->eventTooltip(0, scatter).contains(QStringLiteral("size unknown")),
             qPrintable(timeline->eventTooltip(0, scatter)));
    QVERIFY2(timeline->eventTooltip(0, reduce).contains(QStringLiteral("8196000 B")),
             qPrintable(timeline->eventTooltip(0, reduce)));
  }

  void badJobsAndOwnTracesAfterwards() {
    MainWindow w;
    QString error;
    QVERIFY(!w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/kineto/truncated.json.gz"), &error));
    QVERIFY2(error.contains(QStringLiteral("truncated")), qPrintable(error));
    QVERIFY(w.inspection().store().empty() || !w.inspection().store().meta().imported);
    QVERIFY2(w.openTrace(kJob, &error), qPrintable(error));
    QVERIFY2(w.openTrace(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/golden/ddp.trace.json"), &error),
             qPrintable(error));
    QVERIFY(!w.inspection().store().meta().imported);
    auto* timeline = w.findChild<TimelineView*>();
    timeline->refresh();
    const auto& rows = timeline->layout().rows();
    QVERIFY(!rows.empty());
    QCOMPARE(timeline->rowTitle(rows[0].rank, rows[0].lane), QStringLiteral("compute"));
    QVERIFY(!timeline->layout().hasHostTracks());
  }
};

QTEST_MAIN(TestKinetoViews)
#include "test_kineto_views.moc"
