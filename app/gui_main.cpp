// The GUI's entry point. --open FILE loads a trace at start; --screenshot FILE
// [--run] is for tests and docs: optionally run the current config to the end,
// grab the window to a PNG and exit (0 ok, 2 bad input, 3 the run failed).
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "main_window.h"

namespace {

int g_exitCode = 0;

void grabAndQuit(shardscope::MainWindow& window, const QString& path, int code) {
  // Let queued replots and throttled view updates land before grabbing.
  QTimer::singleShot(600, &window, [&window, path, code] {
    const QPixmap shot = window.grab();
    if (shot.isNull() || !shot.save(path)) {
      std::fprintf(stderr, "error: could not write the screenshot to %s\n", qPrintable(path));
      g_exitCode = 1;
    } else {
      g_exitCode = code;
    }
    QApplication::exit(g_exitCode);
  });
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationVersion(QStringLiteral(SHARDSCOPE_VERSION));
  QApplication::setStyle(QStringLiteral("Fusion"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ShardScope: a live inspector for data-parallel training"));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption open_opt(QStringLiteral("open"), QStringLiteral("Open a trace written by shardscope."),
                                    QStringLiteral("FILE"));
  const QCommandLineOption shot_opt(QStringLiteral("screenshot"),
                                    QStringLiteral("Grab the window to a PNG and exit."), QStringLiteral("FILE"));
  const QCommandLineOption run_opt(QStringLiteral("run"),
                                   QStringLiteral("With --screenshot: run the current config to the end first."));
  const QCommandLineOption size_opt(QStringLiteral("size"), QStringLiteral("Window size for --screenshot."),
                                    QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  parser.addOptions({open_opt, shot_opt, run_opt, size_opt});
  parser.process(app);

  const bool screenshot = parser.isSet(shot_opt);
  if (parser.isSet(run_opt) && !screenshot) {
    std::fprintf(stderr, "error: --run only works with --screenshot FILE\n");
    return 2;
  }

  shardscope::MainWindow window;
  if (screenshot) {
    window.setPersistSettings(false);
    const QStringList wh = parser.value(size_opt).split('x');
    bool ok_w = false, ok_h = false;
    const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
    if (!ok_w || !ok_h || w < 320 || h < 240 || w > 8000 || h > 8000) {
      std::fprintf(stderr, "error: --size must be WxH with 320..8000 x 240..8000, got '%s'\n",
                   qPrintable(parser.value(size_opt)));
      return 2;
    }
    window.resize(w, h);
  }
  window.show();

  if (parser.isSet(open_opt)) {
    QString error;
    if (!window.openTrace(parser.value(open_opt), &error)) {
      if (screenshot) {
        std::fprintf(stderr, "error: %s\n", qPrintable(error));
        return 2;
      }
      QMessageBox::critical(&window, QObject::tr("Cannot open trace"), error);
    }
  }

  if (screenshot) {
    const QString path = parser.value(shot_opt);
    if (parser.isSet(run_opt)) {
      QObject::connect(&window, &shardscope::MainWindow::runFinished, &window,
                       [&window, path](bool ok, const QString& message) {
                         if (!ok) std::fprintf(stderr, "run failed: %s\n", qPrintable(message));
                         grabAndQuit(window, path, ok ? 0 : 3);
                       });
      QTimer::singleShot(0, &window, [&window] {
        QString error;
        if (!window.startRun(&error)) {
          std::fprintf(stderr, "error: %s\n", qPrintable(error));
          QApplication::exit(2);
        }
      });
    } else {
      grabAndQuit(window, path, 0);
    }
  }
  return app.exec();
}
