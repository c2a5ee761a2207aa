// The dark theme: every plot's neutral colours follow it (dark canvas, light
// text) while the Okabe–Ito hues stay, and a figure exported from a dark
// window is byte for byte the figure a light window exports — figures are
// always in the light teaching theme — after which the window is dark again.
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

#include "experiment_panel.h"
#include "main_window.h"
#include "palette.h"
#include "theme.h"
#include "timeline_view.h"

using namespace shardscope;

namespace {

const QStringList kViews = {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("units"),
                             QStringLiteral("comm")};

// Each view's PNG figure from a window showing the trace.
std::vector<QByteArray> exportFigures(MainWindow& w, const QString& dir, const QString& tag) {
  std::vector<QByteArray> out;
  for (const QString& view : kViews) {
    const QString png = dir + QStringLiteral("/%1-%2.png").arg(view, tag);
    QString error;
    if (!w.exportViewFigure(view, png, 1200, 700, &error)) qFatal("%s", qPrintable(error));
    QFile f(png);
    f.open(QIODevice::ReadOnly);
    out.push_back(f.readAll());
  }
  return out;
}

}  // namespace

class TestTheme : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_theme"));
  }

  void themedKeepsHuesAndMirrorsNeutrals() {
    QCOMPARE(Palette::themed(Qt::white, Theme::Light), QColor(Qt::white));
    QVERIFY(Palette::themed(Qt::white, Theme::Dark).lightness() < 40);
    QVERIFY(Palette::themed(QColor(0x33, 0x33, 0x33), Theme::Dark).lightness() > 180);
    const QColor okabe_blue(0x00, 0x72, 0xB2);
    QCOMPARE(Palette::themed(okabe_blue, Theme::Dark), okabe_blue);
  }

  void darkWindowExportsTheLightFigure() {
    QTemporaryDir dir;
    const QString trace = dir.filePath(QStringLiteral("run.json"));
    {
      MainWindow w;
      w.setPersistSettings(false);
      RunConfig c = parseRunArgs({"--strategy", "zero3", "--ranks", "2", "--layers", "3", "--hidden", "48", "--batch",
                                  "4", "--steps", "2", "--clock", "modeled", "--timeout-ms", "20000"});
      w.experimentPanel()->setConfig(c);
      QSignalSpy finished(&w, &MainWindow::runFinished);
      QString error;
      QVERIFY2(w.startRun(&error), qPrintable(error));
      QVERIFY(finished.wait(120000));
      QVERIFY2(w.exportTrace(trace, &error), qPrintable(error));
    }
    std::vector<QByteArray> light;
    {
      MainWindow w;
      w.setPersistSettings(false);
      w.resize(1400, 900);
      w.show();
      QString error;
      QVERIFY2(w.openTrace(trace, &error), qPrintable(error));
      light = exportFigures(w, dir.path(), QStringLiteral("light"));
    }

    Palette::setTheme(Theme::Dark);
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1400, 900);
    w.show();
    QString error;
    QVERIFY2(w.openTrace(trace, &error), qPrintable(error));
    QCustomPlot* plot = w.timeline()->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(plot->xAxis->labelColor().lightness() > 150);  // light text on the dark canvas
    QVERIFY(Palette::background().lightness() < 60);

    const std::vector<QByteArray> dark = exportFigures(w, dir.path(), QStringLiteral("dark"));
    for (size_t i = 0; i < dark.size(); ++i)
      QVERIFY2(dark[i] == light[i], qPrintable(QStringLiteral("the %1 figure from the dark window differs from the light "
                                                             "window's").arg(kViews[int(i)])));

    // Back on screen: dark again.
    QCOMPARE(Palette::theme(), Theme::Dark);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(plot->xAxis->labelColor().lightness() > 150);
    Palette::setTheme(Theme::Light);
  }

  void switchesLiveAndBack() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QCustomPlot* plot = w.timeline()->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const QColor light_label = plot->xAxis->labelColor();
    QVERIFY(light_label.lightness() < 120);
    applyTheme(Theme::Dark);
    QCOMPARE(Palette::theme(), Theme::Dark);
    QVERIFY(plot->xAxis->labelColor().lightness() > 150);
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
    applyTheme(Theme::Light);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(plot->xAxis->labelColor(), light_label);  // exactly the colour the view set
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 180);
  }
};

QTEST_MAIN(TestTheme)
#include "test_theme.moc"
