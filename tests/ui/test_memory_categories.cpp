// The memory view's category toggles: hiding activations takes them out of the
// bars, the over-time stack, the legends and the y axis (so model state and the
// gathered slice fill it) while the summary still reports the ledger; the ZeRO
// prediction is drawn only beside complete model state; the headless figure
// takes `--categories` and refuses a bad one naming it.
#include <QMenu>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>
#include <qcustomplot.h>

#include "engine/run.h"
#include "figure_job.h"
#include "inspect/event_store.h"
#include "memory_view.h"

using namespace shardscope;

namespace {

QStringList legendNames(QCustomPlot* plot) {
  QStringList names;
  for (int i = 0; i < plot->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i))) names << item->plottable()->name();
  return names;
}

bool anyStartsWith(const QStringList& names, const QString& prefix) {
  for (const QString& n : names)
    if (n.startsWith(prefix)) return true;
  return false;
}

}  // namespace

class TestMemoryCategories : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    RunConfig c;
    c.strategy = *parseStrategy("zero3");
    c.ranks = 2;
    c.model.layers = 4;
    c.model.hidden = 64;
    c.batch = 64;  // activations that dwarf this small model's state
    c.steps = 1;
    c.clock = ClockKind::Modeled;
    c.timeout_ms = 20000;
    Run run(c);
    run.execute();
    RunTrace trace = run.trace();
    trace.config = c;
    m_store.setFromTrace(std::move(trace));
  }

  void hidingActivationsRescalesAndKeepsTheLedger() {
    MemoryView view(&m_store);
    view.resize(1000, 700);
    view.refresh(true);
    // At the peak of everything allocated, inside the forward, the batch's activations are held.
    view.setCursorTime(view.series().peakTotal(0)->t_ns);
    const auto all = view.barBytes(0);
    QVERIFY2(all[static_cast<size_t>(Category::Activation)] > 0, "the run books activations at the peak");
    QVERIFY(anyStartsWith(legendNames(view.barsPlot()), QStringLiteral("activation")));
    const double top_all = view.barsPlot()->yAxis->range().upper;

    std::string error;
    view.setShownCategories(*CategoryFilter::parse("model-state,gathered", &error));
    const auto shown = view.barBytes(0);
    QCOMPARE(shown[static_cast<size_t>(Category::Activation)], int64_t{0});
    QCOMPARE(shown[static_cast<size_t>(Category::Param)], all[static_cast<size_t>(Category::Param)]);
    QCOMPARE(shown[static_cast<size_t>(Category::AdamV)], all[static_cast<size_t>(Category::AdamV)]);
    QVERIFY2(view.barsPlot()->yAxis->range().upper < top_all, "the axis shrinks to what is drawn");
    QVERIFY(!anyStartsWith(legendNames(view.barsPlot()), QStringLiteral("activation")));
    QVERIFY(!anyStartsWith(legendNames(view.timePlot()), QStringLiteral("activation")));
    QVERIFY2(anyStartsWith(legendNames(view.barsPlot()), QStringLiteral("predicted (ZeRO paper)")),
             "complete model state keeps its prediction");
    // The summary still reports what the ledger booked, and says what is drawn.
    QLabel* summary = nullptr;
    for (QLabel* l : view.findChildren<QLabel*>())
      if (l->text().contains(QStringLiteral("model state"))) summary = l;
    QVERIFY(summary);
    QVERIFY2(summary->text().contains(QStringLiteral("drawn:")), qPrintable(summary->text()));
    // The over-time peak is the peak of the drawn stack.
    int64_t highest = 0;
    for (const MemorySample& s : view.series().samples(0)) {
      int64_t t = 0;
      for (int c = 0; c < kCategoryCount; ++c)
        if (view.shownCategories().shows(static_cast<Category>(c))) t += s.bytes[static_cast<size_t>(c)];
      highest = std::max(highest, t);
    }
    bool found = false;
    for (int i = 0; i < view.timePlot()->itemCount(); ++i)
      if (auto* text = qobject_cast<QCPItemText*>(view.timePlot()->item(i)); text && text->visible())
        found = found || text->text() == QStringLiteral("rank 0 peak of %1: %2 MiB")
                                             .arg(QString::fromStdString(view.shownCategories().describe()))
                                             .arg(static_cast<double>(highest) / (1024.0 * 1024.0), 0, 'f', 1);
    QVERIFY2(found, "the peak label is the drawn stack's peak, named for what is drawn");
    QCOMPARE(view.chartPeakBytes(), highest);

    // Part of model state hidden: no prediction beside an incomplete bar.
    CategoryFilter no_grad = view.shownCategories();
    no_grad.set(Category::Grad, false);
    view.setShownCategories(no_grad);
    QVERIFY(!anyStartsWith(legendNames(view.barsPlot()), QStringLiteral("predicted")));
  }

  void theButtonsMenuTogglesAndFollows() {
    MemoryView view(&m_store);
    view.refresh(true);
    auto* button = view.findChild<QToolButton*>(QStringLiteral("memoryCategories"));
    QVERIFY(button && button->menu());
    QAction* activation = nullptr;
    for (QAction* a : button->menu()->actions())
      if (a->isCheckable() && a->text() == QStringLiteral("activation")) activation = a;
    QVERIFY(activation);
    QVERIFY(activation->isChecked());
    activation->setChecked(false);  // as a click does
    QVERIFY(!view.shownCategories().shows(Category::Activation));
    QCOMPARE(view.barBytes(0)[static_cast<size_t>(Category::Activation)], int64_t{0});
    // The text is elided to keep the dock narrow; the tooltip names every category.
    QVERIFY2(button->toolTip().startsWith(QStringLiteral("Categories: model state, gathered")), qPrintable(button->toolTip()));
    QVERIFY2(button->text().startsWith(QStringLiteral("Categories: model state")), qPrintable(button->text()));
    view.setShownCategories(CategoryFilter::modelState());
    QCOMPARE(button->text(), QStringLiteral("Categories: model state"));
    QVERIFY(!activation->isChecked());
    view.setShownCategories(CategoryFilter::all());
    QVERIFY(activation->isChecked());
  }

  void headlessFigureTakesCategories() {
    QTemporaryDir dir;
    FigureJob job;
    job.preset = QStringLiteral("zero-stages-compared");
    job.view = QStringLiteral("memory");
    job.runs = QStringLiteral("4");
    job.out = dir.filePath(QStringLiteral("m.png"));
    job.categories = QStringLiteral("model-state,gathered");
    QString message;
    QCOMPARE(runFigureJob(job, &message), 0);
    QVERIFY2(QFileInfo(job.out).size() > 0, qPrintable(message));

    job.categories = QStringLiteral("model-state,actvations");
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("--categories")) && message.contains(QStringLiteral("'actvations'")),
             qPrintable(message));
    job.categories = QStringLiteral("param");
    job.view = QStringLiteral("timeline");
    QCOMPARE(runFigureJob(job, &message), 2);
    QVERIFY2(message.contains(QStringLiteral("--view memory")), qPrintable(message));
  }

 private:
  EventStore m_store;
};

QTEST_MAIN(TestMemoryCategories)
#include "test_memory_categories.moc"
