#include "run_history_model.h"

#include <QBrush>
#include <QColor>
#include <algorithm>

#include "analysis/run_summary.h"
#include "inspect/reported_step.h"
#include "common/units.h"

namespace shardscope {

RunHistoryModel::RunHistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

QString RunHistoryModel::uniqueLabel(const QString& label, const QStringList& taken) const {
  const auto used = [&](const QString& name) {
    if (taken.contains(name)) return true;
    for (const RunRecord& r : m_runs)
      if (r.label == name) return true;
    return false;
  };
  if (!used(label)) return label;
  for (int n = 2;; ++n)
    if (const QString name = QStringLiteral("%1 (%2)").arg(label).arg(n); !used(name)) return name;
}

RunRecord RunHistoryModel::fromTrace(const RunTrace& trace, const QString& file) {
  RunRecord r;
  r.label = file;
  r.source = file;
  r.configKnown = trace.config.has_value();
  if (trace.config) r.config = *trace.config;
  r.ok = true;
  for (const std::vector<Event>& events : trace.events)
    for (const Event& e : events)
      if (e.kind == EventKind::Error) r.ok = false;
  if (!r.ok) r.error = tr("the trace ends in an error (a hang or a mismatch)");
  r.losses = trace.losses;
  r.trace = std::make_shared<const RunTrace>(trace);
  return r;
}

RunHistoryModel::Figures RunHistoryModel::figuresOf(const RunRecord& r) {
  Figures f;
  if (!r.losses.empty() && r.config.backend != Backend::Meta) f.loss = r.losses.back();
  const RunResult* res = r.result.get();
  if ((!res || res->ranks.empty()) && r.trace) {
    // An opened trace: the step the communication view shows (an imported
    // profiler's last-but-one), its times from the events themselves.
    const ReportedStep shown = reportedStepMetrics(r.trace->events, r.trace->imported.get());
    if (!shown.ranks.empty()) {
      int64_t step = 0, exposed = 0;
      for (const StepMetrics& m : shown.ranks) {
        step = std::max(step, m.wall_ns);
        exposed += m.exposed_comm_ns;
      }
      f.step_ms = static_cast<double>(step) * 1e-6;
      f.exposed_ms = static_cast<double>(exposed) / static_cast<double>(shown.ranks.size()) * 1e-6;
      f.overlap = hiddenSharePercent(shown.ranks);
    }
    return f;
  }
  if (!res || res->ranks.empty()) return f;
  int64_t step = 0, exposed = 0;
  for (const StepMetrics& m : res->last_step) {
    step = std::max(step, m.wall_ns);
    exposed += m.exposed_comm_ns;
  }
  if (!res->last_step.empty()) {
    f.step_ms = static_cast<double>(step) * 1e-6;
    f.exposed_ms = static_cast<double>(exposed) / static_cast<double>(res->last_step.size()) * 1e-6;
    f.overlap = hiddenSharePercent(res->last_step);
  }
  // Modeled runs: the same MFU and latency share the summary prints.
  if (res->peak_flops > 0 && !res->last_step.empty()) {
    f.mfu = 100.0 * res->mfu();
    // Checkpointing's recompute: the hardware FLOPs utilisation beside it.
    if (res->hardware_flops_per_step_per_rank > res->flops_per_step_per_rank) f.hfu = 100.0 * res->hfu();
  }
  f.total_peak_mib = toMiB(largestTotalPeak(*res));
  if (res->latency_share) f.latency_share = 100.0 * *res->latency_share;
  if (res->params > 0) {
    const RankResult& rank0 = res->ranks.front();
    f.state_bpp = modelStateBytesPerParam(rank0, res->params);
    // Traffic in the reference texts' notation: bytes in units of N·(P−1)/P
    // (N: the model's, or one TP slice's, bf16 gradient bytes), so DDP's
    // all-reduce reads 2 and ZeRO-3's gathers and reduce-scatter 3.
    const ExpectedTraffic traffic = expectedTraffic(r.config);
    const CommBytes& sent = rank0.comm_bytes;
    if (traffic.n_bytes > 0 && traffic.ring_ranks > 1) {
      f.sent_in_n = traffic.inUnitsOfN(static_cast<double>(sent.all_reduce + sent.reduce_scatter + sent.all_gather));
      f.formula_in_n = traffic.inUnitsOfN(static_cast<double>(traffic.dataParallelTotal()));
    }
    if (r.config.tp > 1) {
      const CommBytes& tp = rank0.tp_comm_bytes;
      f.tp_sent_mib = toMiB(tp.all_reduce + tp.reduce_scatter + tp.all_gather);
    }
    f.formula_bpp = expectedBytesPerParam(r.config);
  }
  return f;
}

void RunHistoryModel::addRun(RunRecord record) {
  beginInsertRows({}, runCount(), runCount());
  m_figures.push_back(figuresOf(record));
  m_runs.push_back(std::move(record));
  // Older runs keep their figures only: their events and their results (a
  // 16k-rank lesson's result holds every rank's ledger and timing) go, so a
  // long session's memory stays bounded by the last kKeptTraces runs.
  int kept = 0;
  for (auto it = m_runs.rbegin(); it != m_runs.rend(); ++it)
    if ((it->trace || it->result) && ++kept > kKeptTraces) {
      it->trace.reset();
      it->result.reset();
    }
  endInsertRows();
}

void RunHistoryModel::clear() { clearExcept(-1); }

int RunHistoryModel::clearExcept(int keep) {
  beginResetModel();
  std::vector<RunRecord> runs;
  std::vector<Figures> figures;
  if (keep >= 0 && keep < runCount()) {
    runs.push_back(std::move(m_runs[static_cast<size_t>(keep)]));
    figures.push_back(m_figures[static_cast<size_t>(keep)]);
  }
  m_runs.swap(runs);  // the old rows (and the traces only they held) are freed when `runs` goes
  m_figures.swap(figures);
  endResetModel();
  return m_runs.empty() ? -1 : 0;
}

int RunHistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : runCount(); }

int RunHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunHistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const RunRecord& r = m_runs[static_cast<size_t>(index.row())];
  const Figures& f = m_figures[static_cast<size_t>(index.row())];
  const auto pair = [](const std::optional<double>& measured, const std::optional<double>& formula, int digits) -> QVariant {
    if (!measured) return QStringLiteral("–");
    QString s = QString::number(*measured, 'f', digits);
    if (formula) s += QStringLiteral(" (formula %1)").arg(QString::number(*formula, 'g', 4));
    return s;
  };
  if (role == Qt::ToolTipRole) {
    if (index.column() == Status && !r.ok) return r.error;
    if (index.column() == Run)
      return r.source.isEmpty() ? tr("double-click to show this run in every view")
                                : tr("opened from %1; double-click to show it in every view").arg(r.source);
    if (index.column() == StateBytes) return tr("rank 0's peak model state / N, measured by the allocator; the formula in brackets");
    if (index.column() == Sent)
      return tr("bytes rank 0 sent on the data-parallel axis in the last step, in units of N·(P−1)/P (N: the model's "
                "bf16 gradient bytes): DDP's 2N reads 2, ZeRO-3's 3N reads 3; the formula in brackets");
    if (index.column() == Mfu)
      return tr("model FLOPs utilisation of the last step on the modeled clock: the model's FLOPs per rank over the "
                "profile's bf16 peak × the step time (recomputed FLOPs not counted); with activation checkpointing "
                "the hardware FLOPs utilisation (HFU, the recompute counted) follows");
    if (index.column() == TotalPeak)
      return tr("%1: the largest over ranks of the allocator's peak of every category summed (the summary's "
                "total_peak_bytes). Not the memory chart's peak, which is one rank's peak of the categories it draws")
          .arg(QString::fromLatin1(kTotalPeakName));
    if (index.column() == LatencyShare)
      return tr("of rank 0's data-parallel collective time in the last step (modeled clock), the share that is the "
                "links' per-message latency (latency × ring steps) rather than bytes over bandwidth");
    if (index.column() == TpSent)
      return tr("bytes rank 0 sent in its tensor-parallel group in the last step (activation all-reduces, Megatron-LM)");
    return {};
  }
  if (role == Qt::ForegroundRole && index.column() == Status && !r.ok) return QBrush(QColor(0xB0, 0x00, 0x20));
  if (role == Qt::TextAlignmentRole)
    return index.column() == Run || index.column() == Status ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                              : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  const auto num = [](const std::optional<double>& v, int digits) -> QVariant {
    return v ? QVariant(QString::number(*v, 'f', digits)) : QVariant(QStringLiteral("–"));
  };
  switch (index.column()) {
    case Index: return index.row() + 1;
    case Run: return r.label;
    case Step: return num(f.step_ms, 3);
    case Exposed: return num(f.exposed_ms, 3);
    case Overlap: return f.overlap ? QVariant(QString::number(*f.overlap, 'f', 1) + QStringLiteral(" %")) : QVariant(QStringLiteral("–"));
    case Mfu:
      if (!f.mfu) return QStringLiteral("–");
      return f.hfu ? tr("%1 % (HFU %2 %)").arg(*f.mfu, 0, 'f', 1).arg(*f.hfu, 0, 'f', 1)
                   : QVariant(QString::number(*f.mfu, 'f', 1) + QStringLiteral(" %"));
    case TotalPeak: return num(f.total_peak_mib, 2);
    case LatencyShare:
      return f.latency_share ? QVariant(QString::number(*f.latency_share, 'f', 1) + QStringLiteral(" %"))
                             : QVariant(QStringLiteral("–"));
    case StateBytes: return pair(f.state_bpp, f.formula_bpp, 2);
    case Sent: return pair(f.sent_in_n, f.formula_in_n, 3);
    case TpSent: return num(f.tp_sent_mib, 2);
    case FinalLoss: return num(f.loss, 4);
    case Status: return r.ok ? (r.trace ? tr("finished") : tr("finished (trace dropped)")) : tr("stopped: %1").arg(r.error.left(80));
    default: return {};
  }
}

QVariant RunHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
  switch (section) {
    case Index: return tr("#");
    case Run: return tr("run");
    case Step: return tr("step (ms)");
    case Exposed: return tr("exposed comm (ms)");
    case Overlap: return tr("comm hidden");
    case Mfu: return tr("MFU");
    case LatencyShare: return tr("comm latency share");
    case StateBytes: return tr("model state (B/param)");
    case TotalPeak: return tr("peak, all categories (MiB)");
    case Sent: return tr("traffic (N·(P−1)/P)");
    case TpSent: return tr("TP traffic (MiB)");
    case FinalLoss: return tr("final loss");
    case Status: return tr("status");
    default: return {};
  }
}

}  // namespace shardscope
