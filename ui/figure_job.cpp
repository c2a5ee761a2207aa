#include "figure_job.h"

#include <QEventLoop>

#include "main_window.h"
#include "preset.h"

namespace shardscope {

int runFigureJob(const FigureJob& job, QString* message) {
  const auto fail = [&](int code, const QString& text) {
    if (message) *message = text;
    return code;
  };
  if (!presetViews().contains(job.view))
    return fail(2, QStringLiteral("--view must be one of %1, got '%2'").arg(presetViews().join(QStringLiteral(", ")), job.view));
  if (job.width < 16 || job.height < 16 || job.width > 20000 || job.height > 20000)
    return fail(2, QStringLiteral("--width and --height must be 16..20000 px, got %1 × %2").arg(job.width).arg(job.height));
  Preset preset;
  try {
    preset = findPreset(job.preset);
  } catch (const PresetError& e) {
    return fail(2, QString::fromStdString(e.what()));
  }
  MainWindow window;
  window.setPersistSettings(false);
  window.resize(1600, 1000);
  window.show();
  bool ok = false;
  QString run_message;
  QEventLoop loop;
  QObject::connect(&window, &MainWindow::presetFinished, &loop, [&](bool preset_ok, const QString& text) {
    ok = preset_ok;
    run_message = text;
    loop.quit();
  });
  QString error;
  if (!window.runPreset(preset, &error)) return fail(2, QStringLiteral("preset %1: %2").arg(preset.name, error));
  loop.exec();
  if (job.cursor_ms) window.setCursorTime(static_cast<int64_t>(*job.cursor_ms * 1e6));
  if (const QString why = window.figureUnavailable(job.view); !why.isEmpty())
    return fail(ok ? 2 : 3, QStringLiteral("preset %1: %2").arg(preset.name, why));
  if (!window.exportViewFigure(job.view, job.out, job.width, job.height, &error)) return fail(1, error);
  if (!ok) return fail(3, QStringLiteral("%1 (figure written to %2)").arg(run_message, job.out));
  return fail(0, QStringLiteral("%1; %2 figure written to %3").arg(run_message, job.view, job.out));
}

}  // namespace shardscope
