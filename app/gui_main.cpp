// The GUI's entry point. --open FILE (or FILE…: files as arguments; several
// PyTorch memory snapshots open together, one per rank) loads a trace at start; --preset NAME
// picks a teaching preset in the form. --screenshot FILE [--run] is for tests
// and docs: optionally run the form's config (or the preset's runs) to the
// end, grab the window to a PNG and exit (0 ok, 2 bad input, 3 the run
// failed); with --step N it starts paused, presses Step N times and grabs the
// window at that stop. --figure --preset NAME --view V --out FILE runs the preset on the
// offscreen platform and writes one view's teaching figure (see FigureJob);
// --runs N|all|N,M picks the preset's runs it draws, several compared;
// --slide draws it for a projector, --all-ranks keeps identical ranks apart.
// --log-level sets what the Log dock shows (default info; stderr keeps warn
// unless it is given); --log-file FILE writes the log there too. --attach ADDR
// [--server-key KEY] shows a run served elsewhere (run --serve), live.
#include <QAction>
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QPixmap>
#include <QSettings>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "common/log.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "figure_job.h"
#include "kernels/cpu_kernels.h"
#include "main_window.h"
#include "theme.h"
#include "preset.h"
#include "stepping_controls.h"
#include "units_view.h"

namespace {

int g_exitCode = 0;
QtMessageHandler g_defaultHandler = nullptr;

// The offscreen platform warns that it cannot resize native windows (docks)
// and about a missing runtime directory; in a headless figure run both are
// expected, and only noise on stderr.
void quietOffscreen(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (message.contains(QLatin1String("propagateSizeHints")) || message.contains(QLatin1String("XDG_RUNTIME_DIR"))) return;
  g_defaultHandler(type, context, message);
}

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

// --cursor: "auto" (the units view's default moment) or ms since run start.
bool parseCursor(const QString& text, bool* is_auto, double* ms) {
  *is_auto = text == QLatin1String("auto");
  if (*is_auto) return true;
  bool ok = false;
  *ms = text.toDouble(&ok);
  return ok && *ms >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer since_start;  // SHARDSCOPE_OPEN_TIMING: start to the opened file's first frame
  since_start.start();
  std::signal(SIGXFSZ, SIG_IGN);  // ulimit -f: a write fails with EFBIG and says so, as in the CLI
  shardscope::cpu::initBlasSingleThreaded();  // OpenBLAS's idle pool would spin on a core through the first 0.1 s
  // What needs no display draws without one: a figure, help and version text
  // always, a screenshot when there is no display to open. The platform is
  // picked before QApplication reads QT_QPA_PLATFORM (an explicit setting wins).
  const bool has_display = !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const bool text_only = std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help-all") == 0 ||
                           std::strcmp(a, "--version") == 0 || std::strcmp(a, "-v") == 0;
    const bool headless = std::strcmp(a, "--figure") == 0 || text_only ||
                          ((std::strcmp(a, "--screenshot") == 0 || std::strncmp(a, "--screenshot=", 13) == 0) && !has_display);
    if (!headless) continue;
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    if (!g_defaultHandler) g_defaultHandler = qInstallMessageHandler(quietOffscreen);
  }

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationVersion(QStringLiteral(SHARDSCOPE_VERSION));
  QApplication::setStyle(QStringLiteral("Fusion"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ShardScope: a live inspector for data-parallel training"));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption open_opt(
      QStringLiteral("open"),
      QStringLiteral("Open a trace written by shardscope, or a PyTorch profiler job: a folder of per-rank Kineto "
                     "traces or one .json / .json.gz, or a folder of flight-recorder dumps (with --figure: draw it)."),
      QStringLiteral("FILE|DIR"));
  const QCommandLineOption preset_opt(
      QStringLiteral("preset"), QStringLiteral("A teaching preset: a built-in name or a .json file."), QStringLiteral("NAME"));
  const QCommandLineOption shot_opt(QStringLiteral("screenshot"),
                                    QStringLiteral("Grab the window to a PNG and exit."), QStringLiteral("FILE"));
  const QCommandLineOption run_opt(QStringLiteral("run"),
                                   QStringLiteral("With --screenshot: run the form's config (or --preset's runs) first."));
  const QCommandLineOption size_opt(QStringLiteral("size"), QStringLiteral("Window size for --screenshot."),
                                    QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  const QCommandLineOption figure_opt(QStringLiteral("figure"),
                                      QStringLiteral("Headless: run --preset (or read --open) and write --view's figure to --out."));
  const QCommandLineOption view_opt(QStringLiteral("view"),
                                    QStringLiteral("timeline, memory, buckets, units, loss, comm, pipeline, stragglers, hta, critical-path, ladder or snapshot (figure, screenshot)."),
                                    QStringLiteral("VIEW"));
  const QCommandLineOption out_opt(QStringLiteral("out"), QStringLiteral("The figure file (.png, .svg, .pdf)."),
                                   QStringLiteral("FILE"));
  const QCommandLineOption width_opt(QStringLiteral("width"), QStringLiteral("Figure width in px."), QStringLiteral("W"),
                                     QStringLiteral("1600"));
  const QCommandLineOption height_opt(QStringLiteral("height"), QStringLiteral("Figure height in px."), QStringLiteral("H"),
                                      QStringLiteral("900"));
  const QCommandLineOption runs_opt(
      QStringLiteral("runs"),
      QStringLiteral("With --figure: which of the preset's runs to draw, N, N,M,… (from 1) or all; several are "
                     "compared (timeline, memory, comm). Default: the last run the view can draw."),
      QStringLiteral("N|all|N,M"));
  const QCommandLineOption categories_opt(
      QStringLiteral("categories"),
      QStringLiteral("With --figure --view memory: the ledger categories to draw, comma-separated: all, model-state "
                     "or names (param, grad, master, adam_m, adam_v, gathered, grad_full, bucket, activation, workspace)."),
      QStringLiteral("LIST"));
  const QCommandLineOption slide_opt(
      QStringLiteral("slide"),
      QStringLiteral("With --figure: presentation setting, text of at least 18 px at 1920x1080 (scaled with --width "
                     "and --height), thicker lines, no cursor."));
  const QCommandLineOption all_ranks_opt(
      QStringLiteral("all-ranks"),
      QStringLiteral("With --figure: draw every rank on the timeline (by default 4+ ranks identical to rank 0 fold "
                     "into one band)."));
  const QCommandLineOption cursor_opt(QStringLiteral("cursor"),
                                      QStringLiteral("Shared cursor after the run: ms since run start, or auto."),
                                      QStringLiteral("MS"));
  const QCommandLineOption step_opt(
      QStringLiteral("step"), QStringLiteral("With --screenshot --run: start paused, Step N times (by op), grab at that stop."),
      QStringLiteral("N"));
  const QCommandLineOption theme_opt(QStringLiteral("theme"),
                                     QStringLiteral("light or dark for this start (default: the View > Theme setting; "
                                                    "--screenshot: light). Figures are always light."),
                                     QStringLiteral("THEME"));
  const QCommandLineOption log_level_opt(
      QStringLiteral("log-level"),
      QStringLiteral("trace, debug, info, warn, error or off: what the Log dock (and stderr) shows; default info "
                     "in the dock, warn on stderr."),
      QStringLiteral("LEVEL"));
  const QCommandLineOption log_file_opt(QStringLiteral("log-file"), QStringLiteral("Write the log to FILE too."),
                                        QStringLiteral("FILE"));
  const QCommandLineOption attach_opt(
      QStringLiteral("attach"),
      QStringLiteral("Show a run served with shardscope-cli run ... --serve ADDR, live from its first step "
                     "(with --screenshot: grab when it ends)."),
      QStringLiteral("ADDR"));
  const QCommandLineOption server_key_opt(
      QStringLiteral("server-key"),
      QStringLiteral("With --attach to any address but 127.0.0.1: the serving machine's key (shardscope-cli keys there)."),
      QStringLiteral("KEY"));
  parser.addPositionalArgument(QStringLiteral("FILE"),
                               QStringLiteral("Files to open, as --open: a trace, a PyTorch profiler job, or PyTorch memory "
                                              "snapshots (several: one per rank)."),
                               QStringLiteral("[FILE…]"));
  parser.addOptions({open_opt, preset_opt, shot_opt, run_opt, size_opt, figure_opt, view_opt, out_opt, width_opt,
                     height_opt, runs_opt, categories_opt, slide_opt, all_ranks_opt, cursor_opt, step_opt, theme_opt,
                     log_level_opt, log_file_opt, attach_opt, server_key_opt});
  parser.process(app);
  // --open (repeatable) and the positional files: what the window opens.
  const QStringList open_paths = parser.values(open_opt) + parser.positionalArguments();

  if (parser.isSet(log_level_opt)) {
    const auto level = shardscope::parseLogLevel(parser.value(log_level_opt).toStdString());
    if (!level) {
      std::fprintf(stderr, "error: --log-level must be one of %s, got '%s'\n", shardscope::logLevelNames(),
                   qPrintable(parser.value(log_level_opt)));
      return 2;
    }
    shardscope::setLogLevel(*level);
  } else {
    shardscope::setLogLevel(spdlog::level::info);
    shardscope::stderrLogSink()->set_level(spdlog::level::warn);
  }
  if (parser.isSet(log_file_opt)) {
    try {
      shardscope::addLogSink(shardscope::makeLogFileSink(parser.value(log_file_opt).toStdString()));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: --log-file %s\n", e.what());
      return 2;
    }
  }

  // The theme to start in (View > Theme switches it live and keeps the choice).
  QString theme = parser.isSet(shot_opt) || parser.isSet(figure_opt)
                      ? QStringLiteral("light")
                      : QSettings().value(QStringLiteral("view/theme"), QStringLiteral("light")).toString();
  if (parser.isSet(theme_opt)) theme = parser.value(theme_opt);
  if (theme != QLatin1String("light") && theme != QLatin1String("dark")) {
    std::fprintf(stderr, "error: --theme must be light or dark, got '%s'\n", qPrintable(theme));
    return 2;
  }
  shardscope::applyTheme(theme == QLatin1String("dark") && !parser.isSet(figure_opt) ? shardscope::Theme::Dark
                                                                                     : shardscope::Theme::Light);

  bool cursor_auto = false;
  double cursor_ms = 0;
  if (parser.isSet(cursor_opt) && !parseCursor(parser.value(cursor_opt), &cursor_auto, &cursor_ms)) {
    std::fprintf(stderr, "error: --cursor must be ms since run start (>= 0) or auto, got '%s'\n",
                 qPrintable(parser.value(cursor_opt)));
    return 2;
  }

  if (parser.isSet(figure_opt)) {
    if (parser.isSet(preset_opt) == !open_paths.isEmpty()) {
      std::fprintf(stderr, "error: --figure needs exactly one of --preset NAME or --open TRACE|DIR (usage: --figure "
                           "--preset NAME --view VIEW --out FILE, or --figure --open TRACE|DIR --view VIEW --out FILE)\n");
      return 2;
    }
    for (const QCommandLineOption* required : {&view_opt, &out_opt}) {
      if (!parser.isSet(*required)) {
        std::fprintf(stderr, "error: --figure needs --%s (usage: --figure --preset NAME|--open TRACE|DIR --view VIEW --out FILE)\n",
                     qPrintable(required->names().first()));
        return 2;
      }
    }
    shardscope::FigureJob job;
    job.preset = parser.value(preset_opt);
    job.open = open_paths.value(0);
    job.more_open = open_paths.mid(1);
    job.view = parser.value(view_opt);
    job.out = parser.value(out_opt);
    bool ok_w = false, ok_h = false;
    job.width = parser.value(width_opt).toInt(&ok_w);
    job.height = parser.value(height_opt).toInt(&ok_h);
    if (!ok_w || !ok_h) {
      std::fprintf(stderr, "error: --width and --height must be integers (px), got '%s' and '%s'\n",
                   qPrintable(parser.value(width_opt)), qPrintable(parser.value(height_opt)));
      return 2;
    }
    if (parser.isSet(cursor_opt) && !cursor_auto) job.cursor_ms = cursor_ms;
    if (parser.isSet(runs_opt)) {
      job.runs = parser.value(runs_opt);
      if (job.runs.isEmpty()) {
        std::fprintf(stderr, "error: --runs must be all, N or N,M,… (the preset's runs, from 1), got ''\n");
        return 2;
      }
    }
    if (parser.isSet(categories_opt)) {
      job.categories = parser.value(categories_opt);
      if (job.categories.isEmpty()) {
        std::fprintf(stderr, "error: --categories must name at least one category (all, model-state, param, ...), got ''\n");
        return 2;
      }
    }
    job.slide = parser.isSet(slide_opt);
    job.all_ranks = parser.isSet(all_ranks_opt);
    QString message;
    const int code = shardscope::runFigureJob(job, &message);
    std::fprintf(code == 0 ? stdout : stderr, "%s%s\n", code == 0 ? "" : code == 3 ? "run stopped: " : "error: ",
                 qPrintable(message));
    return code;
  }

  if (parser.isSet(categories_opt)) {
    std::fprintf(stderr, "error: --categories only works with --figure --view memory (the window's memory view has "
                         "a Categories button)\n");
    return 2;
  }
  for (const QCommandLineOption* figure_only : {&slide_opt, &all_ranks_opt}) {
    if (parser.isSet(*figure_only)) {
      std::fprintf(stderr, "error: --%s only works with --figure (usage: --figure --preset NAME --view VIEW --%s --out FILE)\n",
                   qPrintable(figure_only->names().first()), qPrintable(figure_only->names().first()));
      return 2;
    }
  }
  if (parser.isSet(runs_opt)) {
    std::fprintf(stderr, "error: --runs only works with --figure (usage: --figure --preset NAME --view VIEW --runs N|all|N,M --out FILE)\n");
    return 2;
  }
  const bool screenshot = parser.isSet(shot_opt);
  if (parser.isSet(run_opt) && !screenshot) {
    std::fprintf(stderr, "error: --run only works with --screenshot FILE\n");
    return 2;
  }
  int steps_to_stop = -1;
  if (parser.isSet(step_opt)) {
    bool ok = false;
    steps_to_stop = parser.value(step_opt).toInt(&ok);
    if (!ok || steps_to_stop < 0 || steps_to_stop > 100000 || !parser.isSet(run_opt)) {
      std::fprintf(stderr, "error: --step must be 0..100000 and needs --screenshot FILE --run, got '%s'\n",
                   qPrintable(parser.value(step_opt)));
      return 2;
    }
  }

  std::optional<shardscope::Preset> preset;
  if (parser.isSet(preset_opt)) {
    try {
      preset = shardscope::findPreset(parser.value(preset_opt));
    } catch (const shardscope::PresetError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  // A window also has the Runs table and the capacity calculator to bring forward.
  const QStringList window_views = shardscope::presetViews() << QStringLiteral("runs") << QStringLiteral("capacity");
  if (parser.isSet(view_opt) && !window_views.contains(parser.value(view_opt))) {
    std::fprintf(stderr, "error: --view must be one of %s, got '%s'\n",
                 qPrintable(window_views.join(QStringLiteral(", "))), qPrintable(parser.value(view_opt)));
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
  if (preset) window.experimentPanel()->showPreset(*preset);
  if (parser.isSet(view_opt)) window.showView(parser.value(view_opt));
  window.show();

  if (!open_paths.isEmpty()) {
    QString error;
    if (!window.openFiles(open_paths, &error)) {
      if (screenshot) {
        std::fprintf(stderr, "error: %s\n", qPrintable(error));
        return 2;
      }
      QMessageBox::critical(&window, QObject::tr("Cannot open trace"), error);
    }
    if (qEnvironmentVariableIsSet("SHARDSCOPE_OPEN_TIMING")) {
      // The opened file drawn once (a synchronous paint of the whole window):
      // how long a user waits from starting the program to seeing it.
      window.repaint();
      std::fprintf(stderr, "open timing: %s shown in %.2f s (program start to first frame)\n",
                   qPrintable(open_paths.join(QStringLiteral(", "))), since_start.nsecsElapsed() * 1e-9);
    }
  }

  const bool attach = parser.isSet(attach_opt);
  if (attach) {
    QTimer::singleShot(0, &window, [&window, &parser, &attach_opt, &server_key_opt, screenshot] {
      QString error;
      if (window.attachToRun(parser.value(attach_opt), parser.value(server_key_opt), &error)) return;
      if (screenshot) {
        std::fprintf(stderr, "error: --attach: %s\n", qPrintable(error));
        QApplication::exit(2);
        return;
      }
      QMessageBox::critical(&window, QObject::tr("Cannot attach"), error);
    });
  }

  const auto place_cursor = [&window, &parser, &cursor_opt, cursor_auto, cursor_ms] {
    if (parser.isSet(cursor_opt))
      window.setCursorTime(cursor_auto ? window.unitsView()->shownTime() : static_cast<int64_t>(cursor_ms * 1e6));
    // An explicit --view wins over the view a preset's runs bring forward as they finish.
    if (parser.isSet(QStringLiteral("view"))) window.showView(parser.value(QStringLiteral("view")));
  };

  if (screenshot) {
    const QString path = parser.value(shot_opt);
    if (parser.isSet(run_opt)) {
      const auto done = [&window, path, place_cursor](bool ok, const QString& message) {
        if (!ok) std::fprintf(stderr, "run failed: %s\n", qPrintable(message));
        place_cursor();
        grabAndQuit(window, path, ok ? 0 : 3);
      };
      const bool paused = steps_to_stop >= 0;
      if (paused) {
        // Each stop: press Step until the asked one, then grab it (the run is
        // cancelled when the window closes).
        auto stops = std::make_shared<int>(0);
        QObject::connect(window.bridge(), &shardscope::EngineBridge::gateStopped, &window,
                         [&window, path, stops, steps_to_stop, place_cursor] {
                           if ((*stops)++ < steps_to_stop) {
                             QTimer::singleShot(0, &window, [&window] { window.stepping()->stepAction()->trigger(); });
                             return;
                           }
                           grabAndQuit(window, path, 0);
                         });
      }
      if (preset && !paused)
        QObject::connect(&window, &shardscope::MainWindow::presetFinished, &window, done);
      else
        QObject::connect(&window, &shardscope::MainWindow::runFinished, &window, done);
      QTimer::singleShot(0, &window, [&window, &preset, paused] {
        QString error;
        if (!(preset ? window.runPreset(*preset, &error, paused) : window.startRun(&error, paused))) {
          std::fprintf(stderr, "error: %s\n", qPrintable(error));
          QApplication::exit(2);
        }
      });
    } else if (attach) {
      QObject::connect(&window, &shardscope::MainWindow::runFinished, &window,
                       [&window, path, place_cursor](bool ok, const QString& message) {
                         if (!ok) std::fprintf(stderr, "attached run: %s\n", qPrintable(message));
                         place_cursor();
                         grabAndQuit(window, path, ok ? 0 : 3);
                       });
    } else {
      place_cursor();
      grabAndQuit(window, path, 0);
    }
  }
  return app.exec();
}
