// The window's memory over many lesson runs (issue 52 item 7): runs the
// shipped lessons in teaching order in one real window (offscreen) until
// --runs runs have ended, printing the process's resident memory after each
// lesson, then presses the loss view's "Clear runs" and prints it again.
// A program that prints a table, not a timed test.
//   bench_gui_soak [--runs N] [--skip NAME]...   (default 30 runs)
#include <QApplication>
#include <QPushButton>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "loss_view.h"
#include "main_window.h"
#include "preset.h"

using namespace shardscope;

namespace {

// The heap's bytes in use (glibc): what is held, where RSS also counts what
// the allocator keeps cached or cannot give back (fragmentation).
double heapInUseMiB() {
#ifdef __GLIBC__
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
#else
  return 0;
#endif
}

// VmRSS and VmHWM of this process, in MiB.
std::pair<double, double> residentMiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  double rss = 0, hwm = 0;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stod(line.substr(6)) / 1024.0;
  }
  return {rss, hwm};
}

void settle(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int want = 30;
  QStringList skip;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) want = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--skip") == 0 && i + 1 < argc) skip << QString::fromLocal8Bit(argv[++i]);
  }
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  settle(300);
  const auto [rss0, hwm0] = residentMiB();
  std::printf("%-28s %5s %9s %9s %9s\n", "after", "runs", "RSS MiB", "peak MiB", "heap MiB");
  std::printf("%-28s %5d %9.0f %9.0f %9.0f\n", "window shown", 0, rss0, hwm0, heapInUseMiB());
  int runs = 0;
  while (runs < want) {
    for (const Preset& preset : builtinPresets()) {
      if (runs >= want) break;
      if (skip.contains(preset.name)) continue;
      QEventLoop loop;
      bool finished = false;
      const auto done = QObject::connect(&w, &MainWindow::presetFinished, &loop, [&] {
        finished = true;
        loop.quit();
      });
      QString error;
      if (!w.runPreset(preset, &error)) {
        std::fprintf(stderr, "%s: %s\n", qPrintable(preset.name), qPrintable(error));
        return 1;
      }
      if (!finished) loop.exec();
      QObject::disconnect(done);
      runs += static_cast<int>(preset.runs.size());
      settle(200);
      const auto [rss, hwm] = residentMiB();
      std::printf("%-28s %5d %9.0f %9.0f %9.0f\n", qPrintable(preset.name), runs, rss, hwm, heapInUseMiB());
      std::fflush(stdout);
    }
  }
  auto* clear = w.lossView()->findChild<QPushButton*>(QStringLiteral("clearLossRuns"));
  if (!clear) {
    std::fprintf(stderr, "no Clear runs button\n");
    return 1;
  }
  clear->click();
  settle(1000);
  const auto [rss1, hwm1] = residentMiB();
  std::printf("%-28s %5d %9.0f %9.0f %9.0f\n", "Clear runs", runs, rss1, hwm1, heapInUseMiB());
  return 0;
}
