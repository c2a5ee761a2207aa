// In-app guidance: Help > Keyboard shortcuts lists every shortcut of the
// window's actions (read from the actions, so a new one shows up), each page
// has a "?" whose text is the user guide's own (docs/guide, compiled in; sentence
// by sentence against the source tree, so the two cannot drift), every link in
// README.md and docs/ leads somewhere, and File > Recent files keeps the last
// eight opened files.
#include <QtTest>

#include <QAction>
#include <QDir>
#include <QDirIterator>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QSet>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QToolButton>

#include "main_window.h"
#include "page_help.h"
#include "page_registry.h"
#include "recent_files.h"
#include "shortcuts_dialog.h"

using namespace shardscope;

namespace {

QString collapsed(QString text) { return text.replace(QRegularExpression(QStringLiteral("\\s+")), QStringLiteral(" ")).trimmed(); }

QString readFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(file.readAll());
}

// Every page of the user guide in the source tree, collapsed into one text.
QString guide() {
  QString all;
  for (const QFileInfo& info : QDir(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/docs/guide")).entryInfoList({QStringLiteral("*.md")}, QDir::Files))
    all += collapsed(readFile(info.filePath())) + QLatin1Char(' ');
  return all;
}

// README.md and every Markdown file under docs/.
QStringList markdownFiles() {
  QStringList files{QStringLiteral(SHARDSCOPE_SOURCE_DIR "/README.md")};
  QDirIterator it(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/docs"), {QStringLiteral("*.md")}, QDir::Files, QDirIterator::Subdirectories);
  while (it.hasNext()) files << it.next();
  return files;
}

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as '-'.
QString anchorOf(QString heading) {
  heading = heading.trimmed().toLower();
  heading.remove(QRegularExpression(QStringLiteral("[^\\w\\- ]"), QRegularExpression::UseUnicodePropertiesOption));
  return heading.replace(QLatin1Char(' '), QLatin1Char('-'));
}

// The text outside ``` fences, and the anchors of its headings.
QString withoutCode(const QString& markdown, QSet<QString>* anchors) {
  QString out;
  bool fence = false;
  for (const QString& line : markdown.split(QLatin1Char('\n'))) {
    if (line.startsWith(QLatin1String("```"))) {
      fence = !fence;
      continue;
    }
    if (fence) continue;
    static const QRegularExpression heading(QStringLiteral("^#{1,6} (.*)$"));
    if (const auto m = heading.match(line); m.hasMatch() && anchors) anchors->insert(anchorOf(m.captured(1)));
    out += line + QLatin1Char('\n');
  }
  return out;
}

QString plain(const QString& html) {
  QTextDocument doc;
  doc.setHtml(html);
  return doc.toPlainText();
}

}  // namespace

class TestGuidance : public QObject {
  Q_OBJECT

 private slots:
  void shortcutsListEveryActionsShortcut() {
    MainWindow w;
    w.setPersistSettings(false);
    const QString text = plain(shortcutsHtml(&w));
    int withShortcut = 0;
    for (const QAction* a : w.findChildren<QAction*>()) {
      if (a->shortcut().isEmpty()) continue;
      ++withShortcut;
      const QString keys = a->shortcut().toString(QKeySequence::NativeText);
      const QString name = QString(a->text()).remove(QLatin1Char('&')).remove(QStringLiteral("…"));
      QVERIFY2(text.contains(keys + QLatin1Char('\t') + name) || text.contains(keys + QLatin1Char(' ') + name) ||
                   (text.contains(keys) && text.contains(name)),
               qPrintable(keys + " " + name + " missing from:\n" + text));
    }
    QVERIFY(withShortcut >= 10);
    // Grouped by menu, and the stepping keys under Run.
    QVERIFY(text.contains(QStringLiteral("File")));
    QVERIFY(text.contains(QStringLiteral("Run ▸ Step by")));
    for (const char* key : {"F5", "F6", "F10", "Ctrl+R", "Ctrl+K", "Ctrl+/"})
      QVERIFY2(text.contains(QLatin1String(key)), key);
    // The timeline's own keys.
    QVERIFY(text.contains(QStringLiteral("show or hide the CPU threads")));
    QVERIFY(text.contains(QStringLiteral("Esc")));
  }

  void aNewShortcutShowsUp() {
    MainWindow w;
    w.setPersistSettings(false);
    QVERIFY(!plain(shortcutsHtml(&w)).contains(QStringLiteral("Ctrl+Alt+J")));
    QAction* quit = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (QString(a->text()).remove(QLatin1Char('&')) == QStringLiteral("Detach")) quit = a;
    QVERIFY(quit);
    quit->setShortcut(QKeySequence(QStringLiteral("Ctrl+Alt+J")));
    const QString text = plain(shortcutsHtml(&w));
    QVERIFY2(text.contains(QStringLiteral("Ctrl+Alt+J")), qPrintable(text));
    // An action no menu holds still appears.
    auto* loose = new QAction(QStringLiteral("Loose action"), &w);
    loose->setShortcut(QKeySequence(QStringLiteral("Ctrl+Alt+L")));
    QVERIFY(plain(shortcutsHtml(&w)).contains(QStringLiteral("Loose action")));
  }

  void theHelpMenuOpensTheDialog() {
    MainWindow w;
    w.setPersistSettings(false);
    auto* action = w.findChild<QAction*>(QStringLiteral("shortcutsAction"));
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(QStringLiteral("Ctrl+/")));
    action->trigger();
    auto* dialog = w.findChild<QDialog*>(QStringLiteral("shortcutsDialog"));
    QVERIFY(dialog);
    QVERIFY(dialog->findChild<QTextBrowser*>()->toPlainText().contains(QStringLiteral("Ctrl+R")));
    dialog->close();
  }

  void everyPageHasAHelpButtonAndText() {
    MainWindow w;
    w.setPersistSettings(false);
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    for (const auto& page : w.pages().pages()) {
      const QString name = page->name();
      QVERIFY2(!pageHelpText(name).isEmpty(), qPrintable(name));
      auto* button = w.findChild<QToolButton*>(QStringLiteral("helpButton_") + name);
      QVERIFY2(button, qPrintable(name));
      // On the page's dock title bar, or on the page (the central timeline).
      QWidget* host = button->parentWidget();
      QVERIFY(host == page->widget() || (qobject_cast<QDockWidget*>(host) && static_cast<QDockWidget*>(host)->widget() == page->widget()));
      QCOMPARE(button->text(), QStringLiteral("?"));
    }
    QVERIFY(w.findChild<QToolButton*>(QStringLiteral("helpButton_walkthrough")));
    // A click shows the text.
    w.findChild<QToolButton*>(QStringLiteral("helpButton_memory"))->click();
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("helpBox_memory"));
    QVERIFY(box);
    QCOMPARE(box->text(), pageHelpText(QStringLiteral("memory")));
    box->close();
  }

  void helpTextsAreTheGuidesOwn() {
    const QString doc = guide();
    QVERIFY(!doc.isEmpty());
    QStringList pages = {QStringLiteral("walkthrough")};
    {
      MainWindow w;
      w.setPersistSettings(false);
      pages += w.pages().names();
    }
    for (const QString& page : pages) {
      const QString text = collapsed(pageHelpText(page));
      QVERIFY2(!text.isEmpty(), qPrintable(page + ": no <!-- help: " + page + " --> block in docs/guide"));
      const QStringList sentences = text.split(QRegularExpression(QStringLiteral("(?<=[.!?])\\s+")), Qt::SkipEmptyParts);
      for (const QString& sentence : sentences)
        QVERIFY2(doc.contains(sentence), qPrintable(page + ": not in docs/guide: " + sentence));
    }
    // The help blocks are read from what the guide says, markers and all.
    const QHash<QString, QString> parsed = helpSections(QStringLiteral("a\n<!-- help: x -->\n**X**: shows x.\n<!-- /help -->\nb"));
    QCOMPARE(parsed.value(QStringLiteral("x")), QStringLiteral("**X**: shows x."));
  }

  // The guide the window shows (compiled in) is the guide in the source tree.
  void theCompiledInGuideIsTheSourceTrees() {
    const QDir source(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/docs/guide"));
    const QStringList pages = source.entryList({QStringLiteral("*.md")}, QDir::Files, QDir::Name);
    QVERIFY(pages.size() >= 12);
    QCOMPARE(QDir(QStringLiteral(":/docs/guide")).entryList({QStringLiteral("*.md")}, QDir::Files, QDir::Name), pages);
    for (const QString& page : pages)
      QVERIFY2(readFile(QStringLiteral(":/docs/guide/") + page) == readFile(source.filePath(page)), qPrintable(page));
    // The index links every page of the guide.
    const QString index = readFile(source.filePath(QStringLiteral("index.md")));
    for (const QString& page : pages)
      if (page != QLatin1String("index.md"))
        QVERIFY2(index.contains(QStringLiteral("](") + page + QLatin1Char(')')), qPrintable("index.md does not link " + page));
  }

  // Every relative link of README.md and docs/ names a file that exists, and a
  // heading there when it has an anchor.
  void docLinksResolve() {
    const QStringList files = markdownFiles();
    QVERIFY(files.size() >= 16);
    QHash<QString, QSet<QString>> anchors;
    QHash<QString, QString> texts;
    for (const QString& f : files) texts.insert(f, withoutCode(readFile(f), &anchors[f]));
    static const QRegularExpression link(QStringLiteral("\\]\\(([^)\\s]+)\\)"));
    int checked = 0;
    for (const QString& f : files) {
      for (auto it = link.globalMatch(texts.value(f)); it.hasNext();) {
        const QString url = it.next().captured(1);
        if (url.contains(QRegularExpression(QStringLiteral("^[a-z]+:")))) continue;
        const QString path = url.section(QLatin1Char('#'), 0, 0), anchor = url.section(QLatin1Char('#'), 1);
        const QString target = path.isEmpty() ? f : QDir::cleanPath(QFileInfo(f).absolutePath() + QLatin1Char('/') + path);
        QVERIFY2(QFileInfo::exists(target), qPrintable(f + ": " + url + ": no such file"));
        if (!anchor.isEmpty() && target.endsWith(QLatin1String(".md"))) {
          if (!anchors.contains(target)) withoutCode(readFile(target), &anchors[target]);
          QVERIFY2(anchors.value(target).contains(anchor), qPrintable(f + ": " + url + ": no such heading"));
        }
        ++checked;
      }
    }
    QVERIFY(checked >= 50);
    // The anchor rule itself.
    QCOMPARE(anchorOf(QStringLiteral("GPUs as processes (`--backend cuda --launch processes`)")),
             QStringLiteral("gpus-as-processes---backend-cuda---launch-processes"));
  }

  // README is a front page: the two commands, and at most ~250 lines.
  void theReadmeIsAFrontPage() {
    const QString readme = readFile(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/README.md"));
    QVERIFY(readme.contains(QStringLiteral("scripts/test")));
    QVERIFY(readme.contains(QStringLiteral("scripts/run")));
    QVERIFY(readme.contains(QStringLiteral("docs/guide/index.md")));
    QVERIFY2(readme.count(QLatin1Char('\n')) <= 250, qPrintable(QString::number(readme.count(QLatin1Char('\n')))));
  }

  void recentFilesKeepTheLastEight() {
    QTemporaryDir settingsDir, files;
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());
    QMenu menu;
    QStringList opened;
    RecentFiles recent(&menu, [&](RecentFiles::Kind, const QString& path, QString*) {
      opened << path;
      return true;
    }, nullptr);
    QStringList paths;
    for (int i = 0; i < 10; ++i) {
      const QString path = files.filePath(QStringLiteral("trace%1.json").arg(i));
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      paths << path;
      recent.add(RecentFiles::Kind::Trace, path);
    }
    QCOMPARE(recent.paths().size(), RecentFiles::kMax);
    QCOMPARE(recent.paths().front(), paths[9]);
    QVERIFY(!recent.paths().contains(paths[1]));
    // Stored in QSettings: a second list (a new window) reads them back.
    QMenu menu2;
    RecentFiles again(&menu2, [](RecentFiles::Kind, const QString&, QString*) { return true; }, nullptr);
    QCOMPARE(again.paths(), recent.paths());
    emit menu2.aboutToShow();
    QVERIFY(menu2.actions().size() >= RecentFiles::kMax);
    // Reopening moves it to the front.
    QVERIFY(recent.open(3));
    QCOMPARE(opened, QStringList{paths[6]});
    QCOMPARE(recent.paths().front(), paths[6]);
    // A missing file is removed, with a message naming it.
    QVERIFY(QFile::remove(paths[8]));
    QSignalSpy messages(&recent, &RecentFiles::message);
    const int at = static_cast<int>(recent.paths().indexOf(paths[8]));
    QVERIFY(!recent.open(at));
    QCOMPARE(messages.size(), 1);
    QVERIFY(messages.front().front().toString().contains(QStringLiteral("no longer exists")));
    QVERIFY(!recent.paths().contains(paths[8]));
    QCOMPARE(recent.paths().size(), RecentFiles::kMax - 1);
  }

  void anOpenedExperimentJoinsRecentFiles() {
    QTemporaryDir settingsDir, files;
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());
    MainWindow w;
    w.setPersistSettings(false);  // in memory: the window's own list
    const QString path = files.filePath(QStringLiteral("exp.json"));
    QString error;
    QVERIFY2(w.saveExperiment(path, &error), qPrintable(error));
    QVERIFY2(w.openExperiment(path, &error), qPrintable(error));
    QCOMPARE(w.recentFiles()->paths(), QStringList{QFileInfo(path).absoluteFilePath()});
    QVERIFY(!w.openExperiment(files.filePath(QStringLiteral("missing.json")), &error));
    QCOMPARE(w.recentFiles()->paths().size(), 1);
  }
};

QTEST_MAIN(TestGuidance)
#include "test_guidance.moc"
