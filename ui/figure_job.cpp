#include "figure_job.h"

#include <QEventLoop>

#include "inspect/category_filter.h"
#include "inspect/run_selection.h"
#include "main_window.h"
#include "memory_view.h"
#include "preset.h"
#include "run_history_model.h"

namespace shardscope {

QStringList compareViews() {
  return {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("comm")};
}

namespace {
FigureOptions figureOptions(const FigureJob& job) {
  FigureOptions options;
  options.slide = job.slide;
  options.collapseRanks = !job.all_ranks;
  return options;
}
}  // namespace

int runFigureJob(const FigureJob& job, QString* message) {
  const auto fail = [&](int code, const QString& text) {
    if (message) *message = text;
    return code;
  };
  if (!presetViews().contains(job.view))
    return fail(2, QStringLiteral("--view must be one of %1, got '%2'").arg(presetViews().join(QStringLiteral(", ")), job.view));
  if (job.width < 16 || job.height < 16 || job.width > 20000 || job.height > 20000)
    return fail(2, QStringLiteral("--width and --height must be 16..20000 px, got %1 × %2").arg(job.width).arg(job.height));
  std::optional<CategoryFilter> categories;
  if (!job.categories.isEmpty()) {
    if (job.view != QLatin1String("memory"))
      return fail(2, QStringLiteral("--categories applies to --view memory, not %1").arg(job.view));
    std::string why;
    categories = CategoryFilter::parse(job.categories.toStdString(), &why);
    if (!categories) return fail(2, QStringLiteral("--categories: %1").arg(QString::fromStdString(why)));
    if (categories->empty()) return fail(2, QStringLiteral("--categories: at least one category must be shown"));
  }
  const auto show_categories = [&](MainWindow& window) {
    if (categories) window.memoryView()->setShownCategories(*categories);
  };
  if (!job.open.isEmpty()) {
    // A trace or a PyTorch job folder: opened as File ▸ Open does, then drawn.
    if (!job.runs.isEmpty()) return fail(2, QStringLiteral("--runs picks a preset's runs; it does not apply to --open"));
    MainWindow window;
    window.resize(job.width, job.height);
    QString error;
    if (!window.openFiles(QStringList{job.open} + job.more_open, &error)) return fail(2, error);
    if (job.cursor_ms) window.setCursorTime(static_cast<int64_t>(*job.cursor_ms * 1e6));
    show_categories(window);
    if (const QString why = window.figureUnavailable(job.view); !why.isEmpty())
      return fail(2, QStringLiteral("%1: %2").arg(job.open, why));
    if (!window.exportViewFigure(job.view, job.out, job.width, job.height, &error, figureOptions(job))) return fail(1, error);
    return fail(0, QStringLiteral("%1 figure of %2 written to %3")
                       .arg(job.view, (QStringList{job.open} + job.more_open).join(QStringLiteral(", ")), job.out));
  }
  Preset preset;
  try {
    preset = findPreset(job.preset);
  } catch (const PresetError& e) {
    return fail(2, QString::fromStdString(e.what()));
  }
  const int preset_runs = static_cast<int>(preset.runs.size());
  std::vector<int> picked;
  if (!job.runs.isEmpty()) {
    try {
      picked = parseRunSelection(job.runs.toStdString(), preset_runs);
    } catch (const RunSelectionError& e) {
      return fail(2, QStringLiteral("preset %1: %2").arg(preset.name, QString::fromStdString(e.what())));
    }
    if (job.view == QLatin1String("loss") && static_cast<int>(picked.size()) != preset_runs)
      return fail(2, QStringLiteral("--runs: the loss view overlays every run of the preset (use --runs all or leave it out)"));
    if (picked.size() > 1 && !compareViews().contains(job.view) && job.view != QLatin1String("loss"))
      return fail(2, QStringLiteral("--runs: the %1 view draws one run (--runs N); several runs are compared in the %2 views")
                         .arg(job.view, compareViews().join(QStringLiteral(", "))));
  }
  // A multi-run preset's figure of its lesson view compares its runs, as the
  // lesson does (the memory view: the categories it is about).
  if (picked.empty() && preset_runs > 1 && job.view == preset.view && compareViews().contains(job.view))
    for (int i = 0; i < preset_runs; ++i) picked.push_back(i);
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
  // The preset's runs are the last rows of the Runs table.
  const int first_row = window.history()->runCount() - preset_runs;
  // The window ends a lesson of several runs compared; with no runs picked a
  // figure of another view draws the last run, as it always has.
  if (picked.empty() && window.inspection().comparing() && first_row >= 0)
    window.showHistoryRun(first_row + preset_runs - 1);
  QString shown;  // which runs the figure draws, when not simply the last
  if (job.view != QLatin1String("loss") && picked.size() == 1) {
    const int row = first_row + picked.front();
    if (row < 0 || !window.showHistoryRun(row))
      return fail(ok ? 2 : 3, QStringLiteral("preset %1: run %2 did not finish, so it has no figure").arg(preset.name).arg(picked.front() + 1));
    shown = QStringLiteral("run %1 (%2)").arg(picked.front() + 1).arg(preset.runs[static_cast<size_t>(picked.front())].label);
  } else if (job.view != QLatin1String("loss") && picked.size() > 1) {
    QList<int> rows;
    QStringList numbers;
    for (int i : picked) {
      rows << first_row + i;
      numbers << QString::number(i + 1);
    }
    if (first_row < 0 || !window.compareRuns(rows, &error))
      return fail(ok ? 2 : 3, QStringLiteral("preset %1: cannot compare runs %2: %3")
                                  .arg(preset.name, numbers.join(QStringLiteral(",")), error));
    shown = QStringLiteral("runs %1 compared").arg(numbers.join(QStringLiteral(",")));
  } else if (picked.empty() && !window.figureUnavailable(job.view).isEmpty()) {
    // The last run has nothing for this view (zero3's buckets): the last run that has.
    for (int i = preset_runs - 2; i >= 0 && first_row + i >= 0; --i) {
      if (!window.showHistoryRun(first_row + i)) continue;
      if (window.figureUnavailable(job.view).isEmpty()) {
        shown = QStringLiteral("run %1 (%2; pick others with --runs)").arg(i + 1).arg(preset.runs[static_cast<size_t>(i)].label);
        break;
      }
    }
    if (shown.isEmpty() && first_row + preset_runs - 1 >= 0) window.showHistoryRun(first_row + preset_runs - 1);
  }
  if (job.cursor_ms) window.setCursorTime(static_cast<int64_t>(*job.cursor_ms * 1e6));
  show_categories(window);
  if (const QString why = window.figureUnavailable(job.view); !why.isEmpty())
    return fail(ok ? 2 : 3, QStringLiteral("preset %1: %2").arg(preset.name, why));
  if (!window.exportViewFigure(job.view, job.out, job.width, job.height, &error, figureOptions(job))) return fail(1, error);
  if (!ok) return fail(3, QStringLiteral("%1 (figure written to %2)").arg(run_message, job.out));
  return fail(0, QStringLiteral("%1; %2 figure%3 written to %4")
                     .arg(run_message, job.view, shown.isEmpty() ? QString() : QStringLiteral(" of ") + shown, job.out));
}

}  // namespace shardscope
