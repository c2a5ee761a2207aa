// The "diff" page: two PyTorch profiler jobs compared op by op and kernel by
// kernel (File > Compare PyTorch jobs…), the window's `analyze --diff`. The
// rows, their order (biggest regression first) and every figure per profiled
// step of one rank are core's (kineto/trace_diff.h); the page shows the table
// and, as its figure, the kernels' change per step as bars. Needs no run.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <memory>
#include <thread>

#include "page.h"

class QCustomPlot;
class QLabel;
class QTableView;
class QWidget;

namespace shardscope {

namespace kineto {
struct TraceDiff;
}
class TraceDiffModel;

class TraceDiffPage : public Page {
  Q_DECLARE_TR_FUNCTIONS(TraceDiffPage)
 public:
  explicit TraceDiffPage(QWidget* parent);
  ~TraceDiffPage() override;
  QString name() const override { return QStringLiteral("diff"); }
  QString title() const override;
  QWidget* widget() const override { return m_widget; }
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;

  // Reads both jobs (a trace file or a folder of per-rank traces each) off the
  // GUI thread, with a progress dialog and Cancel while the window is shown
  // (off_thread.h), and shows their diff; false with the error naming the side
  // (CONTROL / TEST), or saying it was cancelled.
  bool openJobs(const QString& control, const QString& test, QString* error);
  // The thread the last openJobs read on (for tests: never the GUI thread).
  std::thread::id lastLoadThread() const { return m_loadThread; }
  void setDiff(std::shared_ptr<const kineto::TraceDiff> diff);
  TraceDiffModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  QCustomPlot* plot() const { return m_plot; }
  QString header() const;  // the sides and the normalisation, as the page shows them

  // Kernel rows drawn as bars: the first of core's order (regressions) and the last (improvements).
  static constexpr int kBarsEachEnd = 8;

 private:
  void drawBars();

  QWidget* m_widget;
  QLabel* m_header;
  QTableView* m_table;
  QCustomPlot* m_plot;
  TraceDiffModel* m_model;
  std::shared_ptr<const kineto::TraceDiff> m_diff;
  std::thread::id m_loadThread;
};

}  // namespace shardscope
