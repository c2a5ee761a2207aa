// Run to first frame in the real window (offscreen): a preset is started as
// the Run button does, and the clock stops when its last run has finished and
// the timeline has painted the result. Prints seconds and peak RSS per try
// (docs/performance.md's window row); a program that prints, not a timed test.
// Usage: bench_first_frame [PRESET] [TRIES] [--ranks N]   (default tp-x-fsdp-70b, 3)
//   --ranks N: every run on N ranks with N samples (memory stays flat from 64 to 1024)
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>

#include "main_window.h"
#include "preset.h"
#include "timeline_view.h"

using namespace shardscope;

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? QByteArray("offscreen") : qgetenv("QT_QPA_PLATFORM"));
  QApplication app(argc, argv);
  QStringList args = QApplication::arguments().mid(1);
  int ranks = 0;
  if (const qsizetype at = args.indexOf(QStringLiteral("--ranks")); at >= 0) {
    ranks = at + 1 < args.size() ? args[at + 1].toInt() : 0;
    if (ranks < 1) {
      std::fprintf(stderr, "bench_first_frame: --ranks needs a number of ranks >= 1\n");
      return 2;
    }
    args.remove(at, 2);
  }
  const QString name = !args.isEmpty() ? args[0] : QStringLiteral("tp-x-fsdp-70b");
  const int tries = args.size() > 1 ? std::max(1, args[1].toInt()) : 3;
  Preset preset;
  try {
    preset = findPreset(name);
  } catch (const PresetError& e) {
    std::fprintf(stderr, "bench_first_frame: %s\n", e.what());
    return 2;
  }
  for (PresetRun& run : preset.runs)
    if (ranks > 0) {
      run.config.ranks = ranks;
      run.config.batch = ranks;
    }
  for (int t = 0; t < tries; ++t) {
    MainWindow window;
    window.setPersistSettings(false);
    window.resize(1600, 1000);
    window.show();
    QApplication::processEvents();
    QEventLoop loop;
    bool ok = false;
    QObject::connect(&window, &MainWindow::presetFinished, &loop, [&](bool preset_ok, const QString&) {
      ok = preset_ok;
      loop.quit();
    });
    QElapsedTimer clock;
    clock.start();
    QString error;
    if (!window.runPreset(preset, &error)) {
      std::fprintf(stderr, "bench_first_frame: %s\n", qPrintable(error));
      return 2;
    }
    loop.exec();
    const double run_s = clock.nsecsElapsed() * 1e-9;
    window.showView(QStringLiteral("timeline"));
    window.timeline()->grab();  // the first frame of the result: laid out and painted
    const double frame_s = clock.nsecsElapsed() * 1e-9;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("try %d: preset %s%s %s, runs finished in %.2f s, first frame at %.2f s, peak RSS %ld MiB\n", t + 1,
                qPrintable(name), ranks > 0 ? qPrintable(QStringLiteral(" at %1 ranks").arg(ranks)) : "", ok ? "ok" : "FAILED", run_s, frame_s, usage.ru_maxrss / 1024);
  }
  return 0;
}
