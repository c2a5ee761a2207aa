// The Runs table: every run of the session (a preset's runs one after
// another, or single runs), one row each with what it measured beside the
// formula's prediction — step time, exposed communication, overlap, model state
// per parameter, bytes sent per step relative to DDP's, final loss — so a
// multi-run preset reads as a comparison. Rows keep their trace and result
// (the last kKeptTraces runs) so a run can be brought back into every view;
// older rows keep their figures only.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "engine/run.h"
#include "config/run_config.h"
#include "trace/run_trace.h"

namespace shardscope {

struct RunRecord {
  QString label;               // "zero3 · 8 ranks" (unique in the table: uniqueLabel)
  QString preset;              // the preset's name, or ""
  RunConfig config;
  bool configKnown = true;     // false: an opened trace without a config this build reads
  QString source;              // an opened trace's file, "" for a run of this session
  bool ok = false;
  QString error;               // the run's one error when it stopped
  std::shared_ptr<const RunTrace> trace;   // null once dropped (older runs)
  std::shared_ptr<const RunResult> result; // null for a run that stopped, and once dropped (older runs)
  std::vector<double> losses;
};

class RunHistoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Run, Step, Exposed, Overlap, Mfu, LatencyShare, StateBytes, TotalPeak, Sent, TpSent, FinalLoss, Status, ColumnCount };
  static constexpr int kKeptTraces = 8;

  explicit RunHistoryModel(QObject* parent = nullptr);

  void addRun(RunRecord record);
  // label, or "label (2)", "label (3)", … when the table (or taken) has it:
  // two runs never share a name in the table or the loss legend.
  QString uniqueLabel(const QString& label, const QStringList& taken = {}) const;
  // A record of an opened trace: its file's name, config, losses and metrics.
  static RunRecord fromTrace(const RunTrace& trace, const QString& file);
  void clear();
  // "Clear runs": every row goes but `keep` (the run on screen, whose result
  // the views read), with its trace; returns the kept row's new index, -1 when none.
  int clearExcept(int keep);
  int runCount() const { return static_cast<int>(m_runs.size()); }
  const RunRecord& run(int row) const { return m_runs[static_cast<size_t>(row)]; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Figures {
    std::optional<double> step_ms, exposed_ms, overlap, mfu, hfu, latency_share, state_bpp, formula_bpp, total_peak_mib,
        sent_in_n, formula_in_n, tp_sent_mib, loss;
  };
  static Figures figuresOf(const RunRecord& r);
  std::vector<RunRecord> m_runs;
  std::vector<Figures> m_figures;
};

}  // namespace shardscope
