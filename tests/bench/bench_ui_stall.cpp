// The UI thread while a run streams into the real window (every view shown,
// offscreen): a 2 ms precise timer ticks on the UI thread for the whole run
// and the longest gap between ticks is the longest stall a user could feel
// (target: none over 50 ms). Also: how long Stop mid-step takes to return the
// window to idle. A program that prints a table, not a timed test.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <vector>

#include "config/run_config.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "main_window.h"

using namespace shardscope;

namespace {

struct Stalls {
  double max_ms = 0, p99_ms = 0, p50_ms = 0;
  double max_busy_ms = 0;  // UI-thread CPU time inside the longest-working gap
  size_t ticks = 0;
};

// CPU time of the calling thread: a long gap with little of it is the
// scheduler starving the UI thread, not the UI's own work.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// Times every event the UI thread dispatches, so the longest stall can be
// named: which object, which event (a paint, a timer, a queued call).
class TimingApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* event) override {
    if (m_depth++ > 0) {  // nested dispatch: the outer one is timed
      const bool r = QApplication::notify(receiver, event);
      --m_depth;
      return r;
    }
    QElapsedTimer t;
    t.start();
    const QEvent::Type type = event->type();
    const bool r = QApplication::notify(receiver, event);
    const double ms = static_cast<double>(t.nsecsElapsed()) * 1e-6;
    --m_depth;
    if (ms > longest_ms) {
      longest_ms = ms;
      longest = QStringLiteral("%1 (%2) event %3")
                    .arg(QString::fromLatin1(receiver->metaObject()->className()), receiver->objectName())
                    .arg(static_cast<int>(type));
    }
    return r;
  }
  double longest_ms = 0;
  QString longest;

 private:
  int m_depth = 0;
};

// Spins the UI event loop until the window reports the run finished.
void waitFinished(MainWindow& w) {
  QEventLoop loop;
  QObject::connect(&w, &MainWindow::runFinished, &loop, &QEventLoop::quit);
  QTimer::singleShot(600000, &loop, &QEventLoop::quit);
  loop.exec();
}

// Runs `config` in the window and records every gap between timer ticks.
Stalls measure(MainWindow& w, const RunConfig& config, double* wall_s, size_t* events) {
  w.experimentPanel()->setConfig(config);
  std::vector<double> gaps;
  QElapsedTimer clock;
  QTimer ticker;
  ticker.setTimerType(Qt::PreciseTimer);
  ticker.setInterval(2);
  qint64 last = 0;
  double last_cpu = threadCpuMs(), max_busy = 0;
  QObject::connect(&ticker, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    const double cpu = threadCpuMs();
    gaps.push_back(static_cast<double>(now - last) * 1e-6);
    max_busy = std::max(max_busy, cpu - last_cpu);
    last = now;
    last_cpu = cpu;
  });
  QString error;
  clock.start();
  if (!w.startRun(&error)) {
    std::fprintf(stderr, "error: %s\n", qPrintable(error));
    std::exit(1);
  }
  ticker.start();
  waitFinished(w);
  ticker.stop();
  *wall_s = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
  *events = w.store().eventCount();
  Stalls s;
  s.ticks = gaps.size();
  s.max_busy_ms = max_busy;
  if (gaps.empty()) return s;
  std::sort(gaps.begin(), gaps.end());
  s.max_ms = gaps.back();
  s.p99_ms = gaps[gaps.size() * 99 / 100];
  s.p50_ms = gaps[gaps.size() / 2];
  return s;
}

RunConfig config(const std::vector<std::string>& args) { return parseRunArgs(args); }


}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  TimingApplication app(argc, argv);
  MainWindow w;
  w.setPersistSettings(false);
  w.resize(1600, 1000);
  w.show();

  struct Case {
    const char* name;
    RunConfig config;
  };
  const Case cases[] = {
      {"ddp, 4 ranks, measured", config({"--strategy", "ddp", "--ranks", "4", "--layers", "6", "--hidden", "256",
                                         "--batch", "32", "--steps", "20", "--bucket-mb", "1", "--first-bucket-mb",
                                         "0.25"})},
      {"zero3, 4 ranks, measured", config({"--strategy", "zero3", "--ranks", "4", "--layers", "6", "--hidden", "256",
                                           "--batch", "32", "--steps", "20"})},
      {"fsdp gpt2-124m, 8 meta ranks, modeled",
       config({"--backend", "meta", "--model", "gpt2-124m", "--strategy", "fsdp", "--ranks", "8", "--batch", "16",
               "--steps", "10"})},
  };
  std::printf("%-40s %8s %8s %7s %8s %8s %8s %12s\n", "run (in the window, all views)", "wall s", "events", "ticks",
              "p50 ms", "p99 ms", "max ms", "max busy ms");
  QStringList longest;
  for (const Case& c : cases) {
    double wall = 0;
    size_t events = 0;
    app.longest_ms = 0;
    const Stalls s = measure(w, c.config, &wall, &events);
    std::printf("%-40s %8.2f %8zu %7zu %8.2f %8.2f %8.2f %12.2f\n", c.name, wall, events, s.ticks, s.p50_ms, s.p99_ms,
                s.max_ms, s.max_busy_ms);
    longest << QStringLiteral("  %1: longest event %2 ms, %3").arg(QLatin1String(c.name)).arg(app.longest_ms, 0, 'f', 1).arg(app.longest);
  }
  for (const QString& line : longest) std::printf("%s\n", qPrintable(line));

  // Stop mid-step: from the click to the window being idle again.
  RunConfig long_run = cases[1].config;
  long_run.steps = 100000;
  w.experimentPanel()->setConfig(long_run);
  QString error;
  w.startRun(&error);
  while (w.bridge()->stepsDone() < 2) QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
  QElapsedTimer stop;
  stop.start();
  QEventLoop idle;
  QObject::connect(&w, &MainWindow::runFinished, &idle, &QEventLoop::quit);
  w.bridge()->cancel();
  idle.exec();
  std::printf("stop mid-step (zero3, 4 ranks): idle after %.1f ms\n", static_cast<double>(stop.nsecsElapsed()) * 1e-6);
  return 0;
}
