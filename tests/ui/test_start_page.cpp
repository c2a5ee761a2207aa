// The first screen that teaches: on first start (no saved window state) the
// window opens on the lessons — every shipped preset in teaching order, its
// question from the preset file and a Run button that starts that preset —
// and File > Lessons and Help > User guide open the lessons and the guide
// (docs/guide, compiled in); README lists the same lessons.
// SHARDSCOPE_SCREENSHOT_DIR=DIR also writes the start page at 1280x720 and
// 1920x1080 and three guide pages there, to be looked at.
#include <QtTest>

#include <QAction>
#include <QFile>
#include <QLabel>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "main_window.h"
#include "preset.h"
#include "start_page.h"
#include "theme.h"
#include "user_guide.h"

using namespace shardscope;

namespace {

// The teaching order: DDP buckets, ZeRO stages, FSDP step and prefetch,
// unit size, hybrid sharding, the hang, slow interconnect, TP vs FSDP, 70B,
// activations, tiny units, dtypes.
const QStringList kLessons = {QStringLiteral("ddp-basics"),          QStringLiteral("zero-stages-compared"),
                              QStringLiteral("fsdp-prefetch-on-off"), QStringLiteral("unit-size"),
                              QStringLiteral("hybrid-2x4"),          QStringLiteral("rank-dependent-hang"),
                              QStringLiteral("slow-interconnect"),   QStringLiteral("tp-vs-fsdp"),
                              QStringLiteral("tp-x-fsdp-70b"),       QStringLiteral("activation-checkpointing"),
                              QStringLiteral("tiny-units"),          QStringLiteral("reduce-dtype"),
                              QStringLiteral("pipeline-schedules"),  QStringLiteral("3d-parallelism")};

QAction* action(MainWindow& w, const char* name) { return w.findChild<QAction*>(QLatin1String(name)); }

void stopRun(MainWindow& w) {
  if (!w.bridge()->isRunning()) return;
  QSignalSpy finished(w.bridge(), &EngineBridge::runFinished);
  w.bridge()->cancel();
  QVERIFY(finished.wait(30000));
}

}  // namespace

class TestStartPage : public QObject {
  Q_OBJECT

  QTemporaryDir m_settings;

 private slots:
  void init() {
    // Each test starts as a first start: a fresh, empty settings directory.
    QCoreApplication::setOrganizationName(QStringLiteral("ShardScopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_start_page"));
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QVERIFY(m_settings.isValid());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope,
                       m_settings.filePath(QString::fromLatin1(QTest::currentTestFunction())));
  }

  void theFirstStartOpensTheLessonsInTeachingOrder() {
    {
      MainWindow w;
      w.resize(1280, 720);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QVERIFY(w.startPageShown());
      StartPage* page = w.startPage();
      QCOMPARE(page->lessons(), kLessons);
      // Below the menu bar (File > Lessons and Help stay reachable), over the docks.
      QVERIFY(page->geometry().top() >= w.menuBar()->geometry().bottom());
      QCOMPARE(page->geometry().bottom(), w.rect().bottom());
      QCOMPARE(page->width(), w.width());
      int previousTop = -1;
      for (const QString& name : kLessons) {
        const Preset preset = findPreset(name);
        QVERIFY2(!preset.question.isEmpty() && preset.question.endsWith(QLatin1Char('?')), qPrintable(name));
        auto* text = page->findChild<QLabel*>(QStringLiteral("lessonText_") + name);
        QVERIFY2(text, qPrintable(name));
        QVERIFY2(text->text().contains(preset.question.toHtmlEscaped()), qPrintable(name + ": " + text->text()));
        auto* run = page->findChild<QPushButton*>(QStringLiteral("lessonRun_") + name);
        QVERIFY2(run, qPrintable(name));
        QCOMPARE(run->text(), QStringLiteral("Run"));
        // In order, one under the other, and not cut off on the right at 1280 px.
        const QPoint at = run->mapTo(page, QPoint(0, 0));
        QVERIFY2(at.y() > previousTop, qPrintable(name));
        previousTop = at.y();
        QVERIFY2(at.x() + run->width() <= page->width(), qPrintable(name));
      }
      w.close();  // saves the window state
    }
    // Not the first start any more: the window opens on itself.
    MainWindow again;
    again.show();
    QVERIFY(QTest::qWaitForWindowExposed(&again));
    QVERIFY(!again.startPageShown());
    again.setPersistSettings(false);
  }

  // README's lessons are the start page's: the same order, the same questions.
  void theReadmeListsTheSameLessons() {
    QFile file(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/README.md"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QString readme = QString::fromUtf8(file.readAll());
    for (int i = 0; i < kLessons.size(); ++i) {
      const QString row = QStringLiteral("| %1 | `%2` | %3 |").arg(i + 1).arg(kLessons[i], findPreset(kLessons[i]).question);
      QVERIFY2(readme.contains(row), qPrintable("README.md lacks the row " + row));
    }
  }

  void aWindowForTestsOrScreenshotsOpensOnItself() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(!w.startPageShown());
  }

  // Run starts that lesson's preset: the form takes it, its first run starts
  // with the preset's own config, and the page makes way for the views.
  void runStartsThePreset_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("one run") << QStringLiteral("ddp-basics");
    QTest::newRow("several runs") << QStringLiteral("zero-stages-compared");
  }
  void runStartsThePreset() {
    QFETCH(QString, name);
    MainWindow w;
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.startPageShown());
    const Preset preset = findPreset(name);
    QSignalSpy started(w.bridge(), &EngineBridge::runStarted);
    auto* run = w.startPage()->findChild<QPushButton*>(QStringLiteral("lessonRun_") + name);
    QVERIFY(run);
    QTest::mouseClick(run, Qt::LeftButton);
    QVERIFY(!w.startPageShown());
    QVERIFY(w.bridge()->isRunning());
    QVERIFY(w.experimentPanel()->activePreset());
    QCOMPARE(w.experimentPanel()->activePreset()->name, name);
    QCOMPARE(runArgs(w.bridge()->config()), runArgs(preset.runs.front().config));
    QCOMPARE(w.presetRunning(), preset.runs.size() > 1);
    QVERIFY(w.bannerText().isEmpty());
    stopRun(w);
    w.setPersistSettings(false);
  }

  void fileLessonsAndHelpUserGuideOpen() {
    MainWindow w;
    w.setPersistSettings(false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(!w.startPageShown());
    QAction* lessons = action(w, "lessonsAction");
    QVERIFY(lessons);
    QCOMPARE(QString(lessons->text()).remove(QLatin1Char('&')), QStringLiteral("Lessons"));
    lessons->trigger();
    QVERIFY(w.startPageShown());
    // Esc (or "Set up an experiment") returns to the window.
    QTest::keyClick(w.startPage(), Qt::Key_Escape);
    QVERIFY(!w.startPageShown());
    lessons->trigger();
    QTest::mouseClick(w.startPage()->findChild<QPushButton*>(QStringLiteral("startCloseButton")), Qt::LeftButton);
    QVERIFY(!w.startPageShown());

    QAction* guide = action(w, "userGuideAction");
    QVERIFY(guide);
    QCOMPARE(QString(guide->text()).remove(QLatin1Char('&')), QStringLiteral("User guide"));
    guide->trigger();
    auto* dialog = w.findChild<UserGuideDialog*>(QStringLiteral("userGuideDialog"));
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    QTextBrowser* browser = dialog->browser();
    QCOMPARE(browser->source(), QUrl(QStringLiteral("qrc:/docs/guide/index.md")));
    QVERIFY2(browser->toPlainText().contains(QStringLiteral("ShardScope user guide")), qPrintable(browser->toPlainText().left(300)));
    // A link of the index leads to its page (resolved against the page shown,
    // as a click does), rendered: the views page, whose help markers stay invisible.
    QVERIFY(browser->document()->toHtml().contains(QStringLiteral("href=\"views.md\"")));
    browser->setSource(browser->source().resolved(QUrl(QStringLiteral("views.md"))));
    QCOMPARE(browser->source(), QUrl(QStringLiteral("qrc:/docs/guide/views.md")));
    const QString views = browser->toPlainText();
    QVERIFY2(views.contains(QStringLiteral("one group of rows per rank")), qPrintable(views.left(300)));
    QVERIFY(!views.contains(QStringLiteral("<!--")) && !views.contains(QStringLiteral("help:")));
    // The start page's "User guide" opens the same dialog.
    dialog->close();
    lessons->trigger();
    QTest::mouseClick(w.startPage()->findChild<QPushButton*>(QStringLiteral("startGuideButton")), Qt::LeftButton);
    QVERIFY(dialog->isVisible());
    QCOMPARE(w.findChildren<UserGuideDialog*>().size(), 1);
  }

  // The start page as a lecturer first sees it, at both screen sizes.
  void startPageScreenshots() {
    const QString dir = qEnvironmentVariable("SHARDSCOPE_SCREENSHOT_DIR");
    for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
      MainWindow w;
      w.setPersistSettings(false);
      w.resize(size);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.showStartPage();
      QCoreApplication::processEvents();
      const QImage shot = w.grab().toImage();
      QCOMPARE(shot.size(), size * w.devicePixelRatio());
      if (!dir.isEmpty())
        QVERIFY(shot.save(QStringLiteral("%1/start-page-%2x%3.png").arg(dir).arg(size.width()).arg(size.height())));
    }
    // In the dark theme too (the page's muted text follows the palette).
    {
      applyTheme(Theme::Dark);
      MainWindow w;
      w.setPersistSettings(false);
      w.resize(1280, 720);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      w.showStartPage();
      QCoreApplication::processEvents();
      const QImage shot = w.grab().toImage();
      // The background is the dark theme's, not the light one's.
      QVERIFY(shot.pixelColor(shot.width() / 2, shot.height() - 10).lightness() < 128);
      if (!dir.isEmpty()) QVERIFY(shot.save(dir + QStringLiteral("/start-page-dark-1280x720.png")));
      applyTheme(Theme::Light);
    }
    // The guide as Help > User guide shows it: its contents and the views page.
    MainWindow w;
    w.setPersistSettings(false);
    UserGuideDialog* guide = w.showUserGuide();
    QVERIFY(QTest::qWaitForWindowExposed(guide));
    for (const char* page : {"index.md", "views.md", "strategies.md"}) {
      guide->showPage(QLatin1String(page));
      const QImage shot = guide->grab().toImage();
      QVERIFY(!shot.isNull());
      if (!dir.isEmpty()) QVERIFY(shot.save(QStringLiteral("%1/guide-%2.png").arg(dir, QLatin1String(page).chopped(3))));
    }
  }
};

QTEST_MAIN(TestStartPage)
#include "test_start_page.moc"
