// The communication view's model: per rank and collective kind, over the
// last step every rank completed, the bytes each rank sent (measured at the
// sends by the run when live; from an opened trace, each event's buffer size
// × its ring factor, 2(n-1)/n for all-reduce and (n-1)/n otherwise, with n
// the ranks seen in that event's group; a TP group's in rows of their own)
// beside the formula's expectation (inspect/run_prediction.h), busbw
// (nccl-tests' definition, over the transfer without the wait for peers) and
// time; and per rank, exposed vs hidden communication (HTA's definition).
#pragma once

#include <QAbstractTableModel>
#include <cstdint>
#include <map>
#include <vector>

#include "trace/event.h"

namespace shardscope {

class EventStore;
struct RunResult;

// The collectives the view counts, in its column order.
inline constexpr EventKind kCommViewKinds[] = {EventKind::AllReduce, EventKind::ReduceScatter, EventKind::AllGather,
                                               EventKind::AllToAll};
inline constexpr int kCommViewKindCount = 4;

class CommStatsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Collective, Ops, Sent, Expected, Ratio, BusBw, Time, Waiting, ColumnCount };

  struct Row {
    int rank = 0;
    EventKind kind = EventKind::AllReduce;
    bool tensor_parallel = false;  // a TP group's collectives (apart from the data-parallel axis)
    int ops = 0;
    int unsized = 0;       // of the ops, how many an imported trace gives no size for
    int64_t sent = 0;      // bytes this rank sent in the step (the sized ops')
    int64_t expected = 0;  // the formula's bytes; 0 when it predicts none
    double busbw = 0;      // GB/s (10^9 bytes)
    int64_t time_ns = 0;   // sum of the collectives' spans
    int64_t wait_ns = 0;   // of which waiting for peers
  };
  struct RankTiming {
    int rank = 0;
    int64_t step_ns = 0;
    int64_t comm_ns = 0;
    int64_t exposed_ns = 0;
    double overlap = 0;  // % of communication hidden behind compute
  };

  explicit CommStatsModel(QObject* parent = nullptr);

  // Recomputes from the store; result: the live run's measurement (nullptr
  // for an opened trace, or a run that stopped).
  void setRun(const EventStore& store, const RunResult* result);
  void clear();

  int step() const { return m_step; }  // -1: no step completed on every rank (inspect/reported_step.h)
  // Communication hidden behind compute over every rank of step(), in %: the
  // Runs table's "comm hidden" (hiddenSharePercent, one formula for both).
  double hiddenShare() const { return m_hiddenShare; }
  bool measuredAtSends() const { return m_measured; }
  const std::vector<Row>& statRows() const { return m_rows; }
  const std::vector<RankTiming>& timing() const { return m_timing; }
  // Ranks the rows index (the store's: an imported rank-3 file's rows say rank 3 of 4), 0 without a step.
  int rankCount() const { return m_step >= 0 ? m_rankCount : 0; }
  // Sum over kinds of one rank's sent bytes on the data-parallel axis (the formula's), and the formula's.
  int64_t sentTotal(int rank) const;
  int64_t expectedTotal() const { return m_expectedTotal; }
  // The TP group's formula per rank per step (Megatron-LM, ExpectedTraffic::
  // tensor_parallel): the TP rows' formula column and the comm figure's outline; 0 without one.
  int64_t expectedTensorParallelTotal() const { return m_expectedTpTotal; }
  // Bytes one rank sent in step() by the link its collectives' groups cross
  // (a group on one node: intra-node; across nodes: the inter-node link, as
  // the modeled clock prices it), both axes; 0 and 0 where the trace does not
  // say (an opened file's groups).
  struct LinkSent {
    int64_t intra = 0;
    int64_t inter = 0;
  };
  LinkSent linkSent(int rank) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Row> m_rows;
  std::vector<RankTiming> m_timing;
  std::map<int, LinkSent> m_linkSent;
  int64_t m_expectedTotal = 0;
  int64_t m_expectedTpTotal = 0;
  QString m_tpNotation;  // the TP formula per step, as text
  QString m_formulaSource;  // "ZeRO paper", "ZeRO paper, adapted to hybrid sharding"
  int m_step = -1;
  int m_rankCount = 0;
  double m_hiddenShare = 0;
  bool m_measured = false;
  bool m_has_formula = false;  // the run's strategy is known (not an imported trace's): the formula column applies
};

}  // namespace shardscope
