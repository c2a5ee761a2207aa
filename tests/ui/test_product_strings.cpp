// What a user reads never calls the reference texts "the seed": after real
// runs of every strategy family, the exported figures (SVG text, legends
// included), the Runs and communication tables (cells, headers, tooltips),
// the timeline's and units grid's tooltips, every label and tooltip of the
// window and every walkthrough text say "seed" only for the random seed
// (tests/strings/check_product_strings.py reads the sources the same way).
#include <QAbstractItemModel>
#include <QFile>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "comm_stats_model.h"
#include "comm_view.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "preset.h"
#include "run_history_model.h"
#include "timeline_view.h"
#include "units_view.h"
#include "walkthrough_model.h"

using namespace shardscope;

namespace {

// The rule of the source check: "seed" alone (the field's name) or "random seed".
bool saysSeedWrongly(const QString& text) {
  if (!text.contains(QLatin1String("seed"), Qt::CaseInsensitive)) return false;
  if (text.trimmed().compare(QLatin1String("seed"), Qt::CaseInsensitive) == 0) return false;
  QString rest = text;
  rest.remove(QRegularExpression(QStringLiteral("random seed|--seed\\b"), QRegularExpression::CaseInsensitiveOption));
  return rest.contains(QLatin1String("seed"), Qt::CaseInsensitive);
}

void checkText(const QString& where, const QString& text) {
  QVERIFY2(!saysSeedWrongly(text), qPrintable(where + QStringLiteral(": ") + text.left(300)));
}

void checkModel(const QString& where, const QAbstractItemModel* model) {
  for (int c = 0; c < model->columnCount(); ++c)
    for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)})
      checkText(where + QStringLiteral(" header"), model->headerData(c, Qt::Horizontal, role).toString());
  for (int r = 0; r < model->rowCount(); ++r)
    for (int c = 0; c < model->columnCount(); ++c)
      for (int role : {int(Qt::DisplayRole), int(Qt::ToolTipRole)})
        checkText(where + QStringLiteral(" cell"), model->data(model->index(r, c), role).toString());
}

}  // namespace

class TestProductStrings : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_product_strings"));
  }

  void nothingSaysSeedButTheRandomSeed() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QTemporaryDir dir;
    for (Strategy s : {Strategy::Ddp, Strategy::Zero1, Strategy::Zero2, Strategy::Zero3, Strategy::Hsdp}) {
      RunConfig c;
      c.strategy = s;
      c.ranks = 4;
      c.model.layers = 2;
      c.model.hidden = 32;
      c.batch = 8;
      c.steps = 2;
      if (s == Strategy::Hsdp) c.shard_group = 2;
      c.clock = ClockKind::Modeled;
      c.profile = "h100-sxm";
      c.timeout_ms = 20000;
      w.experimentPanel()->setConfig(c);
      QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
      QString error;
      QVERIFY2(w.startRun(&error), qPrintable(error));
      QVERIFY(finished.wait(120000));
      const QString name = QString::fromStdString(strategyName(s));
      // Every view's figure: its text is in the SVG.
      for (const QString& view : presetViews()) {
        if (!w.figureUnavailable(view).isEmpty()) continue;
        const QString path = dir.filePath(name + QLatin1Char('-') + view + QStringLiteral(".svg"));
        QVERIFY2(w.exportViewFigure(view, path, 1280, 720, &error), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        checkText(name + QStringLiteral(" ") + view + QStringLiteral(" figure"), QString::fromUtf8(f.readAll()));
      }
      // Legends on screen (names of every plottable of every plot).
      for (QCustomPlot* plot : w.findChildren<QCustomPlot*>())
        for (int i = 0; i < plot->plottableCount(); ++i)
          checkText(name + QStringLiteral(" legend"), plot->plottable(i)->name());
      checkModel(name + QStringLiteral(" comm table"), w.commView()->model());
      // Tooltips over the timeline and the units grid.
      TimelineView* timeline = w.timeline();
      timeline->zoomToFit();
      timeline->plot()->replot(QCustomPlot::rpImmediateRefresh);
      const QRect area = timeline->plot()->axisRect()->rect();
      for (int x = area.left(); x < area.right(); x += 7)
        for (int y = area.top(); y < area.bottom(); y += 9)
          checkText(name + QStringLiteral(" timeline tooltip"), timeline->tooltipAt(QPoint(x, y)));
      UnitsView* units = w.unitsView();
      for (int r = 0; r < units->states().rankCount(); ++r)
        for (int u = 0; u < units->states().unitCount(); ++u)
          checkText(name + QStringLiteral(" units tooltip"), units->cellTooltip(r, u));
      checkText(name + QStringLiteral(" units header"), units->infoText());
      checkText(name + QStringLiteral(" banner"), w.bannerText());
      const Algorithm a = WalkthroughModel::algorithm(s);
      checkText(name + QStringLiteral(" walkthrough"), a.title + a.source + a.note + QStringList(a.lines.begin(), a.lines.end()).join(' '));
    }
    checkModel(QStringLiteral("Runs table"), w.history());
    // Every label and tooltip of the window: the random-seed field's own row says "seed".
    for (QWidget* widget : w.findChildren<QWidget*>()) {
      checkText(QStringLiteral("tooltip of ") + widget->objectName(), widget->toolTip());
      if (auto* label = qobject_cast<QLabel*>(widget)) checkText(QStringLiteral("label ") + label->objectName(), label->text());
    }
    for (const Preset& p : builtinPresets()) {
      checkText(QStringLiteral("preset ") + p.name, p.title + QLatin1Char(' ') + p.text);
      for (const PresetRun& r : p.runs) checkText(QStringLiteral("preset run ") + p.name, r.label);
    }
  }
};

QTEST_MAIN(TestProductStrings)
#include "test_product_strings.moc"
