#include "comm_stats_model.h"

#include <QColor>
#include <algorithm>
#include <map>
#include <set>

#include "common/collective.h"
#include "common/units.h"
#include "inspect/reported_step.h"
#include "inspect/run_prediction.h"
#include "trace/step_metrics.h"
#include "engine/run.h"
#include "inspect/event_store.h"
#include "palette.h"
#include "common/checked_math.h"
#include "common/json_tree.h"

namespace shardscope {

namespace {

int kindIndex(EventKind k) {
  for (int i = 0; i < kCommViewKindCount; ++i)
    if (kCommViewKinds[i] == k) return i;
  return -1;
}

int64_t pick(const CommBytes& b, EventKind k) {
  switch (k) {
    case EventKind::AllReduce: return b.all_reduce;
    case EventKind::ReduceScatter: return b.reduce_scatter;
    case EventKind::AllGather: return b.all_gather;
    default: return 0;
  }
}

QString mib(double bytes) { return QString::number(toMiB(bytes), 'f', 2); }

}  // namespace

CommStatsModel::CommStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

CommStatsModel::LinkSent CommStatsModel::linkSent(int rank) const {
  const auto it = m_linkSent.find(rank);
  return it == m_linkSent.end() ? LinkSent{} : it->second;
}

void CommStatsModel::clear() {
  beginResetModel();
  m_rows.clear();
  m_timing.clear();
  m_linkSent.clear();
  m_expectedTotal = 0;
  m_expectedTpTotal = 0;
  m_step = -1;
  m_hiddenShare = 0;
  m_measured = false;
  endResetModel();
}

void CommStatsModel::setRun(const EventStore& store, const RunResult* result) {
  beginResetModel();
  m_rows.clear();
  m_timing.clear();
  m_linkSent.clear();
  m_expectedTotal = 0;
  m_expectedTpTotal = 0;
  m_step = -1;
  m_hiddenShare = 0;
  m_measured = false;
  const int ranks = store.rankCount();
  m_rankCount = ranks;
  // A replicated run's copied ranks are their source's events in their own
  // groups (of the same sizes): read once per source, relabelled per copy.
  const RankCopies& copies = store.copies();
  // The last step every rank completed.
  std::vector<std::set<int>> ended(static_cast<size_t>(ranks));
  std::map<int, std::set<int>> group_ranks;  // group id -> ranks seen in it
  std::map<int, std::set<int>> source_groups;  // a copied rank's source -> the groups it used
  for (int r = 0; r < ranks; ++r) {
    if (copies.isCopy(r)) continue;
    for (const Event& e : store.events(r)) {
      if (e.kind == EventKind::StepEnd && e.step >= 0) ended[static_cast<size_t>(r)].insert(e.step);
      if (kindIndex(e.kind) >= 0 && e.group >= 0) {
        group_ranks[e.group].insert(r);
        if (!copies.empty()) source_groups[r].insert(e.group);
      }
    }
  }
  for (int r = 0; r < ranks; ++r) {
    if (!copies.isCopy(r)) continue;
    const int source = copies.sourceOf(r);
    ended[static_cast<size_t>(r)] = ended[static_cast<size_t>(source)];
    Event e;
    for (int g : source_groups[source]) {
      e.group = static_cast<int16_t>(g);
      group_ranks[copies.eventFor(r, e).group].insert(r);
    }
  }
  m_step = reportedStep(ended, store.meta().imported.get());
  if (m_step < 0) {
    endResetModel();
    return;
  }
  // Expected bytes per rank per step, per kind, on the data-parallel axis.
  const RunTrace& meta = store.meta();
  const std::optional<RunPrediction> prediction = predictRun(store);
  m_has_formula = prediction.has_value();  // an unknown strategy (an imported trace): no expectation to show
  const CommBytes expected = prediction ? prediction->traffic.data_parallel : CommBytes{};
  m_expectedTotal = prediction ? prediction->traffic.dataParallelTotal() : 0;
  // The TP group's: Megatron-LM's activation collectives (the CLI prints the same formula).
  const CommBytes expected_tp = prediction ? prediction->traffic.tensor_parallel : CommBytes{};
  m_expectedTpTotal = prediction ? prediction->traffic.tensorParallelTotal() : 0;
  m_tpNotation = prediction ? QString::fromStdString(prediction->traffic.tp_step_notation) : QString();
  m_formulaSource = prediction ? QString::fromStdString(formulaSource(prediction->config)) : QString();
  m_measured = result && static_cast<int>(result->ranks.size()) == ranks;
  // Events of a tensor-parallel group are counted apart: the ZeRO formulas
  // predict the data-parallel axis only.
  std::vector<bool> tp_group(meta.groups.size());
  for (size_t g = 0; g < meta.groups.size(); ++g) tp_group[g] = isTensorParallelGroup(meta.groups[g]);
  std::vector<std::vector<Event>> step_events(static_cast<size_t>(ranks));
  // [axis][kind]: axis 0 data-parallel, 1 tensor-parallel.
  struct Sums {
    Row acc[2][kCommViewKindCount];
    double ring_bytes[2][kCommViewKindCount] = {};
    double bus_bytes[2][kCommViewKindCount] = {};
    int64_t transfer_ns[2][kCommViewKindCount] = {};
    double link_bytes[3] = {};  // by LinkLevel: the link each collective's group crosses, both axes
  };
  // One rank's sums over the reported step; its step's events kept for the timing below.
  const auto stepSums = [&](int r) {
    Sums sums;
    auto& [acc, ring_bytes, bus_bytes, transfer_ns, link_bytes] = sums;
    for (const Event& e : store.events(r)) {
      if (e.step != m_step) continue;
      step_events[static_cast<size_t>(r)].push_back(e);
      const int k = kindIndex(e.kind);
      if (k < 0) continue;
      const int axis = e.group >= 0 && static_cast<size_t>(e.group) < tp_group.size() && tp_group[static_cast<size_t>(e.group)];
      const int64_t dur = e.end_ns - e.begin_ns;
      const int64_t wait = std::clamp<int64_t>(e.value, 0, std::max<int64_t>(dur, 0));
      // The collective's own group (trace metadata), else the ranks seen in it.
      const auto group = group_ranks.find(e.group);
      const int n = meta.group(e.group) ? meta.groupSize(e)
                    : group != group_ranks.end() ? static_cast<int>(group->second.size())
                                                 : ranks;
      Row& a = acc[axis][k];
      a.ops += 1;
      if (e.flags & kEventSizeUnknown) a.unsized += 1;
      // Sums clamp: an opened trace's times and bytes are whatever the file says.
      a.time_ns = saturatingAdd(a.time_ns, dur);
      a.wait_ns = saturatingAdd(a.wait_ns, wait);
      const shardscope::Collective c = *collectiveOf(e.kind);
      ring_bytes[axis][k] += ringBytesPerRank(c, static_cast<double>(e.bytes), n);
      if (const CommGroup* g = meta.group(e.group))
        link_bytes[static_cast<size_t>(g->link)] += ringBytesPerRank(c, static_cast<double>(e.bytes), n);
      bus_bytes[axis][k] += static_cast<double>(e.bytes) * busBandwidthFactor(c, n);
      transfer_ns[axis][k] = saturatingAdd(transfer_ns[axis][k], dur - wait);
    }
    return sums;
  };
  std::map<int, Sums> source_sums;  // each copied rank's source's (a copy's groups are as large as its source's)
  for (int r = 0; r < ranks; ++r) {
    const auto cached = copies.isCopy(r) ? source_sums.find(copies.sourceOf(r)) : source_sums.end();
    const Sums sums = cached != source_sums.end() ? cached->second : stepSums(r);
    if (!copies.empty() && !copies.isCopy(r)) source_sums[r] = sums;
    const auto& [acc, ring_bytes, bus_bytes, transfer_ns, link_bytes] = sums;
    LinkSent& link = m_linkSent[r];
    link.intra = static_cast<int64_t>(link_bytes[static_cast<size_t>(LinkLevel::IntraNode)] + 0.5);
    link.inter = static_cast<int64_t>(link_bytes[static_cast<size_t>(LinkLevel::InterNode)] + 0.5);
    // Measured: the strategy's sends and, under tensor parallelism, the TP group's, each in its rows.
    const RankResult* measured = m_measured ? &result->ranks[static_cast<size_t>(r)] : nullptr;
    for (int axis = 0; axis < 2; ++axis)
      for (int k = 0; k < kCommViewKindCount; ++k) {
        Row row = acc[axis][k];
        row.rank = r;
        row.kind = kCommViewKinds[k];
        row.tensor_parallel = axis == 1;
        row.sent = measured ? pick(axis == 1 ? measured->tp_comm_bytes : measured->comm_bytes, row.kind)
                            : static_cast<int64_t>(std::clamp(ring_bytes[axis][k] + 0.5, -9.2e18, 9.2e18));
        row.expected = pick(axis == 0 ? expected : expected_tp, row.kind);
        row.busbw = gbPerSecond(bus_bytes[axis][k], static_cast<double>(transfer_ns[axis][k]));
        if (row.ops > 0 || row.expected > 0 || row.sent > 0) m_rows.push_back(row);
      }
  }
  std::vector<StepMetrics> metrics;
  std::map<int, std::vector<StepMetrics>> by_source;  // a copy's timing is its source's
  for (const StepMetrics& m : computeStepMetrics(step_events, store.meta().imported.get())) {
    if (m.step != m_step) continue;
    metrics.push_back(m);
    if (!copies.empty()) by_source[m.rank].push_back(m);
  }
  for (int r = 0; r < ranks && !copies.empty(); ++r)
    if (copies.isCopy(r))
      for (StepMetrics m : by_source[copies.sourceOf(r)]) {
        m.rank = r;
        metrics.push_back(m);
      }
  for (const StepMetrics& m : metrics) m_timing.push_back({m.rank, m.wall_ns, m.comm_ns, m.exposed_comm_ns, m.overlapPercent()});
  m_hiddenShare = hiddenSharePercent(metrics);  // the Runs table's figure, from the same function
  std::sort(m_timing.begin(), m_timing.end(), [](const RankTiming& a, const RankTiming& b) { return a.rank < b.rank; });
  endResetModel();
}

int64_t CommStatsModel::sentTotal(int rank) const {
  int64_t total = 0;
  for (const Row& r : m_rows)
    if (r.rank == rank && !r.tensor_parallel) total = saturatingAdd(total, r.sent);
  return total;
}

int CommStatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int CommStatsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CommStatsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Row& r = m_rows[static_cast<size_t>(index.row())];
  if (role == Qt::TextAlignmentRole)
    return index.column() == Collective ? QVariant(Qt::AlignLeft | Qt::AlignVCenter) : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DecorationRole && index.column() == Collective) return Palette::kind(r.kind);
  if (role == Qt::ToolTipRole) {
    switch (index.column()) {
      case Sent:
        if (r.unsized > 0)
          return tr("%1 of %2 ops: the trace gives no size (no element counts, or shapes without a known dtype); "
                    "the sum is the sized ops'").arg(r.unsized).arg(r.ops);
        return m_measured ? tr("bytes rank %1 sent in step %2, measured at the sends").arg(r.rank).arg(m_step)
                          : tr("Σ event bytes × ring factor (2(n−1)/n all-reduce, (n−1)/n reduce-scatter and all-gather)");
      case Expected:
        if (r.tensor_parallel)
          return m_expectedTpTotal > 0
                     ? tr("predicted (Megatron-LM), the TP group's activation collectives per step: %1. Not in it: "
                          "the vocab-parallel loss's statistics and the norms' gradient sums (a few floats per token "
                          "or parameter)").arg(m_tpNotation)
                     : tr("no formula: with pipeline stages each stage's TP traffic differs (the CLI prints the per-layer "
                          "Megatron-LM formula)");
        return tr("predicted (%1): the ring formula for this strategy").arg(m_formulaSource);
      case BusBw: return tr("nccl-tests busbw: bytes × ring factor / transfer time (waiting for peers excluded)");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  const bool raw = role == Qt::UserRole;  // numbers, for sorting and tests
  switch (index.column()) {
    case Rank: return r.rank;
    case Collective: return r.tensor_parallel ? tr("%1 (TP group)").arg(Palette::kindTitle(r.kind)) : Palette::kindTitle(r.kind);
    case Ops: return r.ops;
    case Sent:
      if (raw) return static_cast<qlonglong>(r.sent);
      if (r.unsized == r.ops && r.ops > 0) return tr("unknown");
      return r.unsized > 0 ? QStringLiteral("≥ ") + mib(static_cast<double>(r.sent)) : mib(static_cast<double>(r.sent));
    case Expected:
      if (!raw && (!m_has_formula || (r.tensor_parallel && m_expectedTpTotal <= 0))) return QStringLiteral("–");
      return raw ? QVariant(static_cast<qlonglong>(r.expected)) : QVariant(mib(static_cast<double>(r.expected)));
    case Ratio:
      if (r.expected <= 0) return raw ? QVariant(0.0) : QVariant(QStringLiteral("–"));
      return raw ? QVariant(static_cast<double>(r.sent) / r.expected)
                 : QVariant(QString::number(static_cast<double>(r.sent) / r.expected, 'f', 3) + QStringLiteral("×"));
    case BusBw:
      if (!raw && r.unsized == r.ops && r.ops > 0) return QStringLiteral("–");
      return raw ? QVariant(r.busbw) : QVariant(QString::number(r.busbw, 'f', 1));
    case Time:
      return raw ? QVariant(static_cast<qlonglong>(r.time_ns)) : QVariant(QString::number(r.time_ns * 1e-6, 'f', 3));
    case Waiting:
      return raw ? QVariant(static_cast<qlonglong>(r.wait_ns)) : QVariant(QString::number(r.wait_ns * 1e-6, 'f', 3));
    default: return {};
  }
}

QVariant CommStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
  switch (section) {
    case Rank: return tr("rank");
    case Collective: return tr("collective");
    case Ops: return tr("ops");
    case Sent: return tr("sent (MiB)");
    case Expected: return tr("formula (MiB)");
    case Ratio: return tr("sent / formula");
    case BusBw: return tr("busbw (GB/s)");
    case Time: return tr("time (ms)");
    case Waiting: return tr("waiting (ms)");
    default: return {};
  }
}

}  // namespace shardscope
