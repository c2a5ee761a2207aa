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
#include <functional>
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

// Every option of the window's command line.
struct GuiOptions {
  QCommandLineOption open{
      QStringLiteral("open"),
      QStringLiteral("Open a trace written by shardscope, or a PyTorch profiler job: a folder of per-rank Kineto "
                     "traces or one .json / .json.gz, or a folder of flight-recorder dumps (with --figure: draw it)."),
      QStringLiteral("FILE|DIR")};
  QCommandLineOption preset{QStringLiteral("preset"), QStringLiteral("A teaching preset: a built-in name or a .json file."),
                            QStringLiteral("NAME")};
  QCommandLineOption shot{QStringLiteral("screenshot"), QStringLiteral("Grab the window to a PNG and exit."),
                          QStringLiteral("FILE")};
  QCommandLineOption run{QStringLiteral("run"),
                         QStringLiteral("With --screenshot: run the form's config (or --preset's runs) first.")};
  QCommandLineOption size{QStringLiteral("size"), QStringLiteral("Window size for --screenshot."), QStringLiteral("WxH"),
                          QStringLiteral("1600x1000")};
  QCommandLineOption figure{QStringLiteral("figure"),
                            QStringLiteral("Headless: run --preset (or read --open) and write --view's figure to --out.")};
  QCommandLineOption view{QStringLiteral("view"),
                          QStringLiteral("timeline, memory, buckets, units, loss, comm, pipeline, stragglers, hta, "
                                         "critical-path, ladder or snapshot (figure, screenshot)."),
                          QStringLiteral("VIEW")};
  QCommandLineOption out{QStringLiteral("out"), QStringLiteral("The figure file (.png, .svg, .pdf)."),
                         QStringLiteral("FILE")};
  QCommandLineOption width{QStringLiteral("width"), QStringLiteral("Figure width in px."), QStringLiteral("W"),
                           QStringLiteral("1600")};
  QCommandLineOption height{QStringLiteral("height"), QStringLiteral("Figure height in px."), QStringLiteral("H"),
                            QStringLiteral("900")};
  QCommandLineOption runs{
      QStringLiteral("runs"),
      QStringLiteral("With --figure: which of the preset's runs to draw, N, N,M,… (from 1) or all; several are "
                     "compared (timeline, memory, comm). Default: the last run the view can draw."),
      QStringLiteral("N|all|N,M")};
  QCommandLineOption categories{
      QStringLiteral("categories"),
      QStringLiteral("With --figure --view memory: the ledger categories to draw, comma-separated: all, model-state "
                     "or names (param, grad, master, adam_m, adam_v, gathered, grad_full, bucket, activation, workspace)."),
      QStringLiteral("LIST")};
  QCommandLineOption slide{
      QStringLiteral("slide"),
      QStringLiteral("With --figure: presentation setting, text of at least 18 px at 1920x1080 (scaled with --width "
                     "and --height), thicker lines, no cursor.")};
  QCommandLineOption all_ranks{
      QStringLiteral("all-ranks"),
      QStringLiteral("With --figure: draw every rank on the timeline (by default 4+ ranks identical to rank 0 fold "
                     "into one band).")};
  QCommandLineOption cursor{QStringLiteral("cursor"),
                            QStringLiteral("Shared cursor after the run: ms since run start, or auto."),
                            QStringLiteral("MS")};
  QCommandLineOption step{QStringLiteral("step"),
                          QStringLiteral("With --screenshot --run: start paused, Step N times (by op), grab at that stop."),
                          QStringLiteral("N")};
  QCommandLineOption theme{QStringLiteral("theme"),
                           QStringLiteral("light or dark for this start (default: the View > Theme setting; "
                                          "--screenshot: light). Figures are always light."),
                           QStringLiteral("THEME")};
  QCommandLineOption log_level{
      QStringLiteral("log-level"),
      QStringLiteral("trace, debug, info, warn, error or off: what the Log dock (and stderr) shows; default info "
                     "in the dock, warn on stderr."),
      QStringLiteral("LEVEL")};
  QCommandLineOption log_file{QStringLiteral("log-file"), QStringLiteral("Write the log to FILE too."),
                              QStringLiteral("FILE")};
  QCommandLineOption attach{
      QStringLiteral("attach"),
      QStringLiteral("Show a run served with shardscope-cli run ... --serve ADDR, live from its first step "
                     "(with --screenshot: grab when it ends)."),
      QStringLiteral("ADDR")};
  QCommandLineOption server_key{
      QStringLiteral("server-key"),
      QStringLiteral("With --attach to any address but 127.0.0.1: the serving machine's key (shardscope-cli keys there)."),
      QStringLiteral("KEY")};

  void addTo(QCommandLineParser& parser) const {
    parser.setApplicationDescription(QStringLiteral("ShardScope: a live inspector for data-parallel training"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("FILE"),
                                 QStringLiteral("Files to open, as --open: a trace, a PyTorch profiler job, or PyTorch "
                                                "memory snapshots (several: one per rank)."),
                                 QStringLiteral("[FILE…]"));
    parser.addOptions({open, preset, shot, run, size, figure, view, out, width, height, runs, categories, slide,
                       all_ranks, cursor, step, theme, log_level, log_file, attach, server_key});
  }
};

// A command line error: printed, and the exit code 2.
int badInput(const char* format, const QString& a = {}, const QString& b = {}) {
  std::fprintf(stderr, format, qPrintable(a), qPrintable(b));
  return 2;
}

// What needs no display draws without one: a figure, help and version text
// always, a screenshot when there is no display to open. The platform is
// picked before QApplication reads QT_QPA_PLATFORM (an explicit setting wins).
void pickHeadlessPlatform(int argc, char** argv) {
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
}

// --log-level, --log-file and the theme to start in (View > Theme switches it
// live and keeps the choice). Returns an exit code when one is bad.
std::optional<int> applyLogAndTheme(const QCommandLineParser& parser, const GuiOptions& o) {
  if (parser.isSet(o.log_level)) {
    const auto level = shardscope::parseLogLevel(parser.value(o.log_level).toStdString());
    if (!level)
      return badInput("error: --log-level must be one of %s, got '%s'\n", QString::fromUtf8(shardscope::logLevelNames()),
                      parser.value(o.log_level));
    shardscope::setLogLevel(*level);
  } else {
    shardscope::setLogLevel(spdlog::level::info);
    shardscope::stderrLogSink()->set_level(spdlog::level::warn);
  }
  if (parser.isSet(o.log_file)) {
    try {
      shardscope::addLogSink(shardscope::makeLogFileSink(parser.value(o.log_file).toStdString()));
    } catch (const std::exception& e) {
      return badInput("error: --log-file %s\n", QString::fromUtf8(e.what()));
    }
  }
  QString theme = parser.isSet(o.shot) || parser.isSet(o.figure)
                      ? QStringLiteral("light")
                      : QSettings().value(QStringLiteral("view/theme"), QStringLiteral("light")).toString();
  if (parser.isSet(o.theme)) theme = parser.value(o.theme);
  if (theme != QLatin1String("light") && theme != QLatin1String("dark"))
    return badInput("error: --theme must be light or dark, got '%s'\n", theme);
  shardscope::applyTheme(theme == QLatin1String("dark") && !parser.isSet(o.figure) ? shardscope::Theme::Dark
                                                                                   : shardscope::Theme::Light);
  return std::nullopt;
}

// --figure: one view's teaching figure, headless (see FigureJob).
int runFigureCommand(const QCommandLineParser& parser, const GuiOptions& o, const QStringList& open_paths,
                     std::optional<double> cursor_ms) {
  if (parser.isSet(o.preset) == !open_paths.isEmpty())
    return badInput("error: --figure needs exactly one of --preset NAME or --open TRACE|DIR (usage: --figure "
                    "--preset NAME --view VIEW --out FILE, or --figure --open TRACE|DIR --view VIEW --out FILE)\n");
  for (const QCommandLineOption* required : {&o.view, &o.out}) {
    if (!parser.isSet(*required))
      return badInput("error: --figure needs --%s (usage: --figure --preset NAME|--open TRACE|DIR --view VIEW --out FILE)\n",
                      required->names().first());
  }
  shardscope::FigureJob job;
  job.preset = parser.value(o.preset);
  job.open = open_paths.value(0);
  job.more_open = open_paths.mid(1);
  job.view = parser.value(o.view);
  job.out = parser.value(o.out);
  bool ok_w = false, ok_h = false;
  job.width = parser.value(o.width).toInt(&ok_w);
  job.height = parser.value(o.height).toInt(&ok_h);
  if (!ok_w || !ok_h)
    return badInput("error: --width and --height must be integers (px), got '%s' and '%s'\n", parser.value(o.width),
                    parser.value(o.height));
  if (cursor_ms) job.cursor_ms = *cursor_ms;
  if (parser.isSet(o.runs)) {
    job.runs = parser.value(o.runs);
    if (job.runs.isEmpty()) return badInput("error: --runs must be all, N or N,M,… (the preset's runs, from 1), got ''\n");
  }
  if (parser.isSet(o.categories)) {
    job.categories = parser.value(o.categories);
    if (job.categories.isEmpty())
      return badInput("error: --categories must name at least one category (all, model-state, param, ...), got ''\n");
  }
  job.slide = parser.isSet(o.slide);
  job.all_ranks = parser.isSet(o.all_ranks);
  QString message;
  const int code = shardscope::runFigureJob(job, &message);
  std::fprintf(code == 0 ? stdout : stderr, "%s%s\n", code == 0 ? "" : code == 3 ? "run stopped: " : "error: ",
               qPrintable(message));
  return code;
}

// Flags that only mean something with --figure, or --run without --screenshot.
std::optional<int> refuseMisplacedFlags(const QCommandLineParser& parser, const GuiOptions& o) {
  if (parser.isSet(o.categories))
    return badInput("error: --categories only works with --figure --view memory (the window's memory view has "
                    "a Categories button)\n");
  for (const QCommandLineOption* figure_only : {&o.slide, &o.all_ranks}) {
    if (parser.isSet(*figure_only))
      return badInput("error: --%s only works with --figure (usage: --figure --preset NAME --view VIEW --%s --out FILE)\n",
                      figure_only->names().first(), figure_only->names().first());
  }
  if (parser.isSet(o.runs))
    return badInput("error: --runs only works with --figure (usage: --figure --preset NAME --view VIEW --runs N|all|N,M "
                    "--out FILE)\n");
  if (parser.isSet(o.run) && !parser.isSet(o.shot)) return badInput("error: --run only works with --screenshot FILE\n");
  // A window also has the Runs table and the capacity calculator to bring forward.
  const QStringList window_views = shardscope::presetViews() << QStringLiteral("runs") << QStringLiteral("capacity");
  if (parser.isSet(o.view) && !window_views.contains(parser.value(o.view)))
    return badInput("error: --view must be one of %s, got '%s'\n", window_views.join(QStringLiteral(", ")),
                    parser.value(o.view));
  return std::nullopt;
}

// The window's size for --screenshot; false (after saying why) when --size is bad.
bool sizeForScreenshot(shardscope::MainWindow& window, const QCommandLineParser& parser, const GuiOptions& o) {
  window.setPersistSettings(false);
  const QStringList wh = parser.value(o.size).split('x');
  bool ok_w = false, ok_h = false;
  const int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
  if (!ok_w || !ok_h || w < 320 || h < 240 || w > 8000 || h > 8000) {
    badInput("error: --size must be WxH with 320..8000 x 240..8000, got '%s'\n", parser.value(o.size));
    return false;
  }
  window.resize(w, h);
  return true;
}

// --open and the positional files, opened in the shown window. Returns an
// exit code when a screenshot cannot go on without them.
std::optional<int> openAtStart(shardscope::MainWindow& window, const QStringList& paths, bool screenshot,
                               const QElapsedTimer& since_start) {
  QString error;
  if (!window.openFiles(paths, &error)) {
    if (screenshot) return badInput("error: %s\n", error);
    QMessageBox::critical(&window, QObject::tr("Cannot open trace"), error);
  }
  if (qEnvironmentVariableIsSet("SHARDSCOPE_OPEN_TIMING")) {
    // The opened file drawn once (a synchronous paint of the whole window):
    // how long a user waits from starting the program to seeing it.
    window.repaint();
    std::fprintf(stderr, "open timing: %s shown in %.2f s (program start to first frame)\n",
                 qPrintable(paths.join(QStringLiteral(", "))), since_start.nsecsElapsed() * 1e-9);
  }
  return std::nullopt;
}

// --screenshot FILE: grabbed now, when --attach's run ends, or with --run when
// the run (or the preset's runs) ends; with --step N at the Nth stop.
void grabScreenshot(shardscope::MainWindow& window, const QString& path, bool run, bool attach,
                    const std::optional<shardscope::Preset>& preset, int steps_to_stop,
                    const std::function<void()>& place_cursor) {
  if (!run) {
    if (attach) {
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
    return;
  }
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
                     [&window, path, stops, steps_to_stop] {
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
}

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer since_start;  // SHARDSCOPE_OPEN_TIMING: start to the opened file's first frame
  since_start.start();
  std::signal(SIGXFSZ, SIG_IGN);  // ulimit -f: a write fails with EFBIG and says so, as in the CLI
  shardscope::cpu::initBlasSingleThreaded();  // OpenBLAS's idle pool would spin on a core through the first 0.1 s
  pickHeadlessPlatform(argc, argv);

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationName(QStringLiteral("ShardScope"));
  QApplication::setApplicationVersion(QStringLiteral(SHARDSCOPE_VERSION));
  QApplication::setStyle(QStringLiteral("Fusion"));

  const GuiOptions o;
  QCommandLineParser parser;
  o.addTo(parser);
  parser.process(app);
  // --open (repeatable) and the positional files: what the window opens.
  const QStringList open_paths = parser.values(o.open) + parser.positionalArguments();
  if (const auto code = applyLogAndTheme(parser, o)) return *code;

  bool cursor_auto = false;
  double cursor_ms = 0;
  if (parser.isSet(o.cursor) && !parseCursor(parser.value(o.cursor), &cursor_auto, &cursor_ms))
    return badInput("error: --cursor must be ms since run start (>= 0) or auto, got '%s'\n", parser.value(o.cursor));
  if (parser.isSet(o.figure)) {
    return runFigureCommand(parser, o, open_paths,
                            parser.isSet(o.cursor) && !cursor_auto ? std::optional<double>(cursor_ms) : std::nullopt);
  }
  if (const auto code = refuseMisplacedFlags(parser, o)) return *code;
  const bool screenshot = parser.isSet(o.shot);
  int steps_to_stop = -1;
  if (parser.isSet(o.step)) {
    bool ok = false;
    steps_to_stop = parser.value(o.step).toInt(&ok);
    if (!ok || steps_to_stop < 0 || steps_to_stop > 100000 || !parser.isSet(o.run))
      return badInput("error: --step must be 0..100000 and needs --screenshot FILE --run, got '%s'\n",
                      parser.value(o.step));
  }
  std::optional<shardscope::Preset> preset;
  if (parser.isSet(o.preset)) {
    try {
      preset = shardscope::findPreset(parser.value(o.preset));
    } catch (const shardscope::PresetError& e) {
      return badInput("error: %s\n", QString::fromUtf8(e.what()));
    }
  }

  shardscope::MainWindow window;
  if (screenshot && !sizeForScreenshot(window, parser, o)) return 2;
  if (preset) window.experimentPanel()->showPreset(*preset);
  if (parser.isSet(o.view)) window.showView(parser.value(o.view));
  window.show();
  if (!open_paths.isEmpty()) {
    if (const auto code = openAtStart(window, open_paths, screenshot, since_start)) return *code;
  }
  const bool attach = parser.isSet(o.attach);
  if (attach) {
    QTimer::singleShot(0, &window, [&window, &parser, &o, screenshot] {
      QString error;
      if (window.attachToRun(parser.value(o.attach), parser.value(o.server_key), &error)) return;
      if (screenshot) {
        std::fprintf(stderr, "error: --attach: %s\n", qPrintable(error));
        QApplication::exit(2);
        return;
      }
      QMessageBox::critical(&window, QObject::tr("Cannot attach"), error);
    });
  }
  const auto place_cursor = [&window, &parser, &o, cursor_auto, cursor_ms] {
    if (parser.isSet(o.cursor))
      window.setCursorTime(cursor_auto ? window.unitsView()->shownTime() : static_cast<int64_t>(cursor_ms * 1e6));
    // An explicit --view wins over the view a preset's runs bring forward as they finish.
    if (parser.isSet(o.view)) window.showView(parser.value(o.view));
  };
  if (screenshot)
    grabScreenshot(window, parser.value(o.shot), parser.isSet(o.run), attach, preset, steps_to_stop, place_cursor);
  return app.exec();
}
