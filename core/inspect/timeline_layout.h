// The timeline's model: rows (rank × lane) indexed for fast culling, and the
// draw items for one viewport. Layout runs before painting: boxes off screen
// are never visited (binary search on begin and on the running max of end), and
// consecutive boxes narrower than kMinBoxPx fold into one merged box, so a row
// yields at most ~width / kMinBoxPx items whatever its event count. Collectives
// on a lane that also computes (tensor parallelism's all-reduces on the compute
// lane) never fold into the compute around them: they are laid out apart, after
// the lane's other boxes (drawn on top), folding only among themselves, at
// least kMinOverlayPx wide. No widgets.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "inspect/rank_symmetry.h"

#include "trace/event.h"

namespace shardscope {

class EventStore;
struct ImportedSource;

struct TimelineRow {
  int rank = 0;
  Lane lane = Lane::Compute;
  double top = 0;     // y units from the top of the timeline (the y axis is reversed)
  double height = 1;  // y units: 1 for lanes with boxes, less for the host's instants
  // The band that stands for one class of collapsed ranks (setFolds), the
  // index of its fold; -1 for a lane's row. A band has no boxes of its own;
  // rank is the first rank it stands for.
  int fold = -1;
  bool isBand() const { return fold >= 0; }
  double center() const { return top + height / 2; }
};

struct TimelineDrawItem {
  double x0 = 0;          // px from the viewport's left edge
  double x1 = 0;
  int row = 0;
  int32_t event = -1;     // index into store.events(rank); first event of a fold
  int32_t folded = 1;     // events merged into this box (1: a plain box)
  EventKind kind = EventKind::Forward;
  bool mixed = false;     // a fold of several kinds
};

// A step's first step_begin over all ranks.
struct StepStart {
  int32_t step = 0;  // the step's number as recorded
  int64_t ns = 0;    // ns since run start
};

struct TimelineMarker {
  double x = 0;           // px from the viewport's left edge
  int row = 0;
  int32_t event = -1;
  EventKind kind = EventKind::BucketReady;
};

class TimelineLayout {
 public:
  static constexpr double kMinBoxPx = 3.0;
  // Collectives drawn over a computing lane: thin enough that a forward's
  // 64 all-reduces read as stripes over its compute, not as one block.
  static constexpr double kMinOverlayPx = 1.0;

  // Ingests the store's new events (incremental; rebuilds after a store reset).
  // Returns true when the set of rows changed.
  bool sync(const EventStore& store);
  // Whether the last sync saw store as it is now. After a reset or clear (a
  // new run) the lanes still index the old run's events: until the next sync,
  // layout() yields nothing rather than boxes pointing into cleared events.
  bool current(const EventStore& store) const;

  const std::vector<TimelineRow>& rows() const { return m_rows; }
  // An imported trace's CPU-thread tracks: shown (default) or collapsed away.
  void setShowHostTracks(bool show);
  bool showHostTracks() const { return m_showHostTracks; }
  bool hasHostTracks() const;  // an imported trace with CPU-thread rows to show or hide
  // Rows: per rank, compute then gather, reduce, comm, host, each once any
  // rank draws on that lane (an imported trace: the rank's tracks that draw
  // anything, in its order). -1 when the lane has no row.
  int rowOf(int rank, Lane lane) const;
  double totalHeight() const { return m_rows.empty() ? 0 : m_rows.back().top + m_rows.back().height; }
  // Row whose band holds y (clamped to the first/last row); -1 without rows.
  int rowAt(double y) const;
  // Each step seen, in step order, with its first step_begin over all ranks.
  // One entry per step present (step numbers are mapped densely, never used
  // as indices: a trace's one step 20,000,000 is one entry).
  const std::vector<StepStart>& stepStarts() const { return m_stepStarts; }
  // ns range covered by boxes and markers (what "zoom to fit" shows: not the
  // allocations before the first op). {0, 0} while there is none.
  int64_t drawnBegin() const { return m_drawnEnd >= m_drawnBegin ? m_drawnBegin : 0; }
  int64_t drawnEnd() const { return m_drawnEnd >= m_drawnBegin ? m_drawnEnd : 0; }
  // Classes of ranks each drawn as one band "same as rank S" after rank S's
  // rows, instead of their own rows (findRankSymmetry's folds); empty draws
  // every rank.
  void setFolds(std::vector<RankFold> folds);
  const std::vector<RankFold>& folds() const { return m_folds; }
  bool collapsed(int rank) const {
    return rank >= 0 && static_cast<size_t>(rank) < m_foldOf.size() && m_foldOf[static_cast<size_t>(rank)] >= 0;
  }
  // Bit (1 << kind) for every kind drawn so far (boxes and markers).
  uint32_t kinds() const { return m_kinds; }

  // Lays out the time window [t0, t1] (ns) over width_px for rows
  // [first_row, last_row]. Results stay valid until the next layout().
  void layout(double t0_ns, double t1_ns, double width_px, int first_row, int last_row);
  const std::vector<TimelineDrawItem>& items() const { return m_items; }
  const std::vector<TimelineMarker>& markers() const { return m_markers; }
  // Items of one row as [first, last) into items() (rows are laid out in
  // order; within a row, x order, then the collectives over a computing lane in x order).
  std::pair<size_t, size_t> rowItems(int row) const;

  // Hit tests against the last layout (x in px from the viewport's left edge).
  const TimelineDrawItem* itemAt(int row, double x) const;
  const TimelineMarker* markerAt(int row, double x, double tolerance_px) const;

 private:
  // Parallel arrays, so layout never touches the 64-byte events themselves:
  // a zoomed-out frame visits a few hundred entries per row, far apart.
  struct Lane1D {
    std::vector<int32_t> index;   // into store.events(rank), sorted by begin
    std::vector<int64_t> begin;   // ns, parallel to index
    std::vector<int64_t> end;     // ns, max(begin, end_ns): never before begin
    std::vector<int64_t> maxEnd;  // running max of end: monotonic, binary-searchable
    std::vector<EventKind> kind;
    bool sorted = true;
    void push(int32_t i, const Event& e);
    void sortIfNeeded(const std::vector<Event>& events);
  };
  struct LaneData {
    Lane1D boxes;
    Lane1D collectives;  // collectives: folded apart from boxes (see the top)
    Lane1D major;  // bucket_ready, error
    Lane1D minor;  // grad_ready
  };

  void rebuildRows();
  void rebuildImportedRows(const ImportedSource& source);
  void noteStepStart(int32_t step, int64_t ns);
  void layoutBoxes(int row, const Lane1D& lane, double min_px = kMinBoxPx);
  void layoutMarkers(int row, const Lane1D& lane);
  double px(int64_t t) const { return (static_cast<double>(t) - m_t0) * m_scale; }

  const EventStore* m_store = nullptr;
  uint64_t m_generation = ~0ull;
  std::vector<size_t> m_cursors;            // per rank: events ingested
  // [rank][lane]; a rank's lanes are allocated with its first event, so a
  // trace's rank count alone (metadata.ranks) costs a few bytes per rank.
  std::vector<std::vector<LaneData>> m_lanes;
  std::vector<TimelineRow> m_rows;
  std::vector<int> m_rowOf;                 // [rank * m_slots + lane] -> row or -1
  size_t m_slots = kLaneCount;              // lanes per rank: 5, or 256 tracks of an imported trace
  bool m_showHostTracks = true;
  std::vector<RankFold> m_folds;  // by source
  std::vector<int> m_foldOf;      // [rank] -> index into m_folds for a collapsed rank, else -1
  std::vector<StepStart> m_stepStarts;  // sorted by step
  uint32_t m_kinds = 0;
  int64_t m_drawnBegin = INT64_MAX;
  int64_t m_drawnEnd = INT64_MIN;

  double m_t0 = 0;
  double m_scale = 1;  // px per ns
  double m_viewWidth = 0;  // px
  std::vector<TimelineDrawItem> m_items;
  std::vector<TimelineMarker> m_markers;
  std::vector<std::pair<size_t, size_t>> m_rowItems;
  std::vector<std::pair<size_t, size_t>> m_rowMarkers;
};

}  // namespace shardscope
