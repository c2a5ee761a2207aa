#include "inspect/timeline_layout.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "inspect/event_store.h"

namespace shardscope {

namespace {

// Row order inside a rank group: what computes, what talks, then the host's instants.
constexpr Lane kLaneOrder[] = {Lane::Compute, Lane::Gather, Lane::Reduce, Lane::Comm, Lane::Host};


// A viewport time (a double from the plot, zoomed anywhere) as ns, clamped to int64's range.
int64_t clampNs(double t) {
  constexpr double kLimit = 9.2e18;  // just inside int64
  if (!(t > -kLimit)) return -static_cast<int64_t>(kLimit);
  if (t > kLimit) return static_cast<int64_t>(kLimit);
  return static_cast<int64_t>(t);
}

// The host lane only carries instants: a thinner row keeps the boxes large.
double rowHeight(Lane lane) { return lane == Lane::Host ? 0.6 : 1.0; }

// First index in [from, v.size()) with v[i] >= t (v ascending), searched
// outward from `from`: a fold or a marker skip lands a few hundred entries
// ahead, so this reads a few nearby cache lines instead of bisecting the rest
// of a lane of 100k+ entries (the bulk of a zoomed-out frame's layout).
size_t gallop(const std::vector<int64_t>& v, size_t from, int64_t t) {
  const size_t n = v.size();
  size_t lo = from, hi = from, step = 1;  // v[lo - 1] < t once lo > from
  while (hi < n && v[hi] < t) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = std::min(hi, n);
  const auto first = v.begin() + static_cast<std::ptrdiff_t>(lo);
  return static_cast<size_t>(std::lower_bound(first, v.begin() + static_cast<std::ptrdiff_t>(hi), t) - v.begin());
}

}  // namespace

void TimelineLayout::Lane1D::push(int32_t i, const Event& e) {
  if (!begin.empty() && e.begin_ns < begin.back()) sorted = false;
  const int64_t finish = std::max(e.begin_ns, e.end_ns);
  index.push_back(i);
  begin.push_back(e.begin_ns);
  end.push_back(finish);
  maxEnd.push_back(maxEnd.empty() ? finish : std::max(maxEnd.back(), finish));
  kind.push_back(e.kind);
}

void TimelineLayout::Lane1D::sortIfNeeded(const std::vector<Event>& events) {
  if (sorted) return;
  // Stable: equal begins keep record order (an instant's recording order matters).
  std::stable_sort(index.begin(), index.end(), [&](int32_t a, int32_t b) {
    return events[static_cast<size_t>(a)].begin_ns < events[static_cast<size_t>(b)].begin_ns;
  });
  int64_t running = INT64_MIN;
  for (size_t k = 0; k < index.size(); ++k) {
    const Event& e = events[static_cast<size_t>(index[k])];
    begin[k] = e.begin_ns;
    end[k] = std::max(e.begin_ns, e.end_ns);
    running = std::max(running, end[k]);
    maxEnd[k] = running;
    kind[k] = e.kind;
  }
  sorted = true;
}

bool TimelineLayout::current(const EventStore& store) const {
  return m_store == &store && m_generation == store.generation();
}

bool TimelineLayout::sync(const EventStore& store) {
  const bool restart = m_store != &store || m_generation != store.generation();
  if (restart) {
    m_store = &store;
    m_generation = store.generation();
    m_cursors.clear();
    m_lanes.clear();
    m_folds.clear();  // another run: its own symmetry, if any, is found again
    m_foldOf.clear();
    m_stepStarts.clear();
    m_kinds = 0;
    m_drawnBegin = INT64_MAX;
    m_drawnEnd = INT64_MIN;
    m_items.clear();
    m_markers.clear();
    m_rowItems.clear();
    m_rowMarkers.clear();
  }
  // An imported trace's lanes are its tracks (up to 256 per rank).
  m_slots = store.meta().imported ? 256 : static_cast<size_t>(kLaneCount);
  const auto ranks = static_cast<size_t>(store.rankCount());
  if (m_lanes.size() < ranks) {
    m_lanes.resize(ranks);
    m_cursors.resize(ranks, 0);
  }
  for (size_t r = 0; r < ranks; ++r) {
    // A copied rank's rows draw its source's lanes (layout()): nothing of its own.
    if (store.isCopy(static_cast<int>(r))) continue;
    const std::vector<Event>& events = store.events(static_cast<int>(r));
    if (m_cursors[r] < events.size() && m_lanes[r].empty()) m_lanes[r].resize(m_slots);
    for (size_t i = m_cursors[r]; i < events.size(); ++i) {
      const Event& e = events[i];
      const auto lane = static_cast<size_t>(e.lane);
      if (lane >= m_lanes[r].size()) continue;
      LaneData& d = m_lanes[r][lane];
      const auto idx = static_cast<int32_t>(i);
      const bool drawn = e.kind == EventKind::BucketReady || e.kind == EventKind::Error ||
                         e.kind == EventKind::GradReady || !isInstant(e.kind);
      if (drawn) {
        m_drawnBegin = std::min(m_drawnBegin, e.begin_ns);
        m_drawnEnd = std::max(m_drawnEnd, std::max(e.begin_ns, e.end_ns));
      }
      switch (e.kind) {
        case EventKind::StepBegin:
          if (e.step >= 0) noteStepStart(e.step, e.begin_ns);
          break;
        case EventKind::BucketReady:
        case EventKind::Error:
          d.major.push(idx, e);
          m_kinds |= 1u << static_cast<unsigned>(e.kind);
          break;
        case EventKind::GradReady:
          d.minor.push(idx, e);
          m_kinds |= 1u << static_cast<unsigned>(e.kind);
          break;
        case EventKind::Alloc:
        case EventKind::Free:
        case EventKind::StepEnd: break;  // memory view / step lines carry these
        default:
          if (isInstant(e.kind)) break;
          (isAnyCollective(e.kind) ? d.collectives : d.boxes).push(idx, e);
          m_kinds |= 1u << static_cast<unsigned>(e.kind);
          break;
      }
    }
    m_cursors[r] = events.size();
  }
  const std::vector<TimelineRow> before = m_rows;
  rebuildRows();
  const bool changed = before.size() != m_rows.size() ||
                       !std::equal(before.begin(), before.end(), m_rows.begin(), [](auto& a, auto& b) {
                         return a.rank == b.rank && a.lane == b.lane;
                       });
  return changed || restart;
}

void TimelineLayout::noteStepStart(int32_t step, int64_t ns) {
  // Steps arrive in order in a run: the search ends at the back.
  auto it = m_stepStarts.end();
  if (!m_stepStarts.empty() && m_stepStarts.back().step >= step)
    it = std::lower_bound(m_stepStarts.begin(), m_stepStarts.end(), step,
                          [](const StepStart& s, int32_t v) { return s.step < v; });
  if (it != m_stepStarts.end() && it->step == step) {
    it->ns = std::min(it->ns, ns);
    return;
  }
  m_stepStarts.insert(it, StepStart{step, ns});
}

void TimelineLayout::setShowHostTracks(bool show) {
  if (show == m_showHostTracks) return;
  m_showHostTracks = show;
  if (m_store) rebuildRows();
}

void TimelineLayout::rebuildImportedRows(const ImportedSource& source) {
  // Each rank's own tracks in the import's order (GPU streams, then CPU
  // threads), those that draw anything; CPU threads only when shown.
  m_rows.clear();
  m_rowOf.assign(m_lanes.size() * m_slots, -1);
  for (size_t r = 0; r < m_lanes.size(); ++r)
    for (size_t l = 0; l < m_lanes[r].size(); ++l) {
      const LaneData& d = m_lanes[r][l];
      if (d.boxes.index.empty() && d.collectives.index.empty() && d.major.index.empty() && d.minor.index.empty()) continue;
      const ImportedTrack* track = source.track(static_cast<int>(r), static_cast<Lane>(l));
      const bool host = !track || track->role == Lane::Host;
      if (host && !m_showHostTracks) continue;
      m_rowOf[r * m_slots + l] = static_cast<int>(m_rows.size());
      m_rows.push_back({static_cast<int>(r), static_cast<Lane>(l), totalHeight(), host ? 0.8 : 1.0});
    }
}

bool TimelineLayout::hasHostTracks() const {
  if (!m_store || !m_store->meta().imported) return false;
  const ImportedSource& source = *m_store->meta().imported;
  for (size_t r = 0; r < m_lanes.size(); ++r)
    for (size_t l = 0; l < m_lanes[r].size(); ++l) {
      const ImportedTrack* track = source.track(static_cast<int>(r), static_cast<Lane>(l));
      if ((!track || track->role == Lane::Host) && (!m_lanes[r][l].boxes.index.empty() || !m_lanes[r][l].collectives.index.empty()))
        return true;
    }
  return false;
}

void TimelineLayout::rebuildRows() {
  if (m_store && m_store->meta().imported) return rebuildImportedRows(*m_store->meta().imported);
  // A lane gets a row in every rank group once any rank draws on it, so the
  // groups line up; compute always has one.
  std::array<bool, kLaneCount> used{};
  used[static_cast<size_t>(Lane::Compute)] = true;
  for (const auto& rank : m_lanes)
    for (size_t l = 0; l < rank.size(); ++l) {
      const LaneData& d = rank[l];
      used[l] = used[l] || !d.boxes.index.empty() || !d.collectives.index.empty() || !d.major.index.empty() ||
                !d.minor.index.empty();
    }
  m_rows.clear();
  m_rowOf.assign(m_lanes.size() * m_slots, -1);
  // Every rank gets its rows, events or not: a rank that recorded nothing
  // shows as empty. A class of collapsed ranks shares one band after its
  // source's rows.
  size_t next_fold = 0;
  for (size_t r = 0; r < m_lanes.size(); ++r) {
    if (collapsed(static_cast<int>(r))) continue;
    for (Lane lane : kLaneOrder) {
      if (!used[static_cast<size_t>(lane)]) continue;
      m_rowOf[r * m_slots + static_cast<size_t>(lane)] = static_cast<int>(m_rows.size());
      m_rows.push_back({static_cast<int>(r), lane, totalHeight(), rowHeight(lane)});
    }
    for (; next_fold < m_folds.size() && m_folds[next_fold].source == static_cast<int>(r); ++next_fold) {
      TimelineRow band{m_folds[next_fold].ranks.front(), Lane::Compute, totalHeight(), 1.0};
      band.fold = static_cast<int>(next_fold);
      m_rows.push_back(band);
    }
  }
}

void TimelineLayout::setFolds(std::vector<RankFold> folds) {
  std::erase_if(folds, [](const RankFold& f) { return f.ranks.empty(); });
  std::sort(folds.begin(), folds.end(), [](const RankFold& a, const RankFold& b) { return a.source < b.source; });
  const auto same = [](const RankFold& a, const RankFold& b) { return a.source == b.source && a.ranks == b.ranks; };
  if (std::equal(folds.begin(), folds.end(), m_folds.begin(), m_folds.end(), same)) return;
  m_folds = std::move(folds);
  m_foldOf.clear();
  for (size_t i = 0; i < m_folds.size(); ++i)
    for (int r : m_folds[i].ranks) {
      if (r < 0) continue;
      if (m_foldOf.size() <= static_cast<size_t>(r)) m_foldOf.resize(static_cast<size_t>(r) + 1, -1);
      m_foldOf[static_cast<size_t>(r)] = static_cast<int>(i);
    }
  if (m_store) rebuildRows();
}

int TimelineLayout::rowOf(int rank, Lane lane) const {
  const size_t k = static_cast<size_t>(rank) * m_slots + static_cast<size_t>(lane);
  return rank >= 0 && k < m_rowOf.size() ? m_rowOf[k] : -1;
}

int TimelineLayout::rowAt(double y) const {
  if (m_rows.empty()) return -1;
  const auto it = std::upper_bound(m_rows.begin(), m_rows.end(), y,
                                   [](double v, const TimelineRow& r) { return v < r.top; });
  return std::max(0, static_cast<int>(it - m_rows.begin()) - 1);
}

void TimelineLayout::layout(double t0_ns, double t1_ns, double width_px, int first_row, int last_row) {
  m_items.clear();
  m_markers.clear();
  m_rowItems.assign(m_rows.size(), {0, 0});
  m_rowMarkers.assign(m_rows.size(), {0, 0});
  if (!m_store || !current(*m_store) || t1_ns <= t0_ns || width_px <= 0) return;
  m_t0 = t0_ns;
  m_scale = width_px / (t1_ns - t0_ns);
  m_viewWidth = width_px;
  first_row = std::max(first_row, 0);
  last_row = std::min(last_row, static_cast<int>(m_rows.size()) - 1);
  for (int row = first_row; row <= last_row; ++row) {
    const TimelineRow& r = m_rows[static_cast<size_t>(row)];
    if (r.isBand()) continue;  // the collapsed ranks' band draws no boxes
    std::vector<LaneData>& lanes = m_lanes[static_cast<size_t>(m_store->sourceOf(r.rank))];
    if (lanes.empty()) continue;  // a rank without events
    LaneData& d = lanes[static_cast<size_t>(r.lane)];
    const std::vector<Event>& events = m_store->events(r.rank);
    d.boxes.sortIfNeeded(events);
    d.collectives.sortIfNeeded(events);
    d.major.sortIfNeeded(events);
    d.minor.sortIfNeeded(events);
    const size_t items_first = m_items.size();
    // A lane of collectives only (the gather, reduce and comm lanes) folds as
    // any lane; over a computing lane's boxes they keep their own, thinner folds.
    if (d.boxes.index.empty()) {
      layoutBoxes(row, d.collectives);
    } else {
      layoutBoxes(row, d.boxes);
      layoutBoxes(row, d.collectives, kMinOverlayPx);
    }
    m_rowItems[static_cast<size_t>(row)] = {items_first, m_items.size()};
    const size_t markers_first = m_markers.size();
    layoutMarkers(row, d.minor);
    layoutMarkers(row, d.major);  // after minor: drawn on top
    m_rowMarkers[static_cast<size_t>(row)] = {markers_first, m_markers.size()};
  }
}

void TimelineLayout::layoutBoxes(int row, const Lane1D& lane, double min_px) {
  const size_t n = lane.index.size();
  const auto t_of_px = [&](double x) { return m_t0 + x / m_scale; };
  // First box that can reach the viewport: maxEnd is monotonic.
  size_t i = static_cast<size_t>(std::lower_bound(lane.maxEnd.begin(), lane.maxEnd.end(),
                                                  clampNs(m_t0)) - lane.maxEnd.begin());
  const double view_end_t = m_t0 + m_viewWidth / m_scale;
  while (i < n && static_cast<double>(lane.begin[i]) <= view_end_t) {
    const double x0 = px(lane.begin[i]), x1 = px(lane.end[i]);
    if (x1 - x0 >= min_px) {
      m_items.push_back({x0, x1, row, lane.index[i], 1, lane.kind[i], false});
      ++i;
      continue;
    }
    // Fold: swallow every following box that ends within min_px of the
    // fold's end, jumping over them with one search per step.
    TimelineDrawItem fold{x0, x1, row, lane.index[i], 1, lane.kind[i], false};
    size_t j = i + 1;
    while (j < n) {
      const int64_t t_next = clampNs(t_of_px(fold.x1 + min_px));
      const size_t k = gallop(lane.maxEnd, j, t_next);
      if (k > j) {
        fold.folded += static_cast<int32_t>(k - j);
        fold.x1 = std::max(fold.x1, px(lane.maxEnd[k - 1]));
        if (lane.kind[k - 1] != fold.kind) fold.mixed = true;
      }
      if (k >= n || static_cast<double>(lane.begin[k]) > view_end_t) {
        j = k;
        break;
      }
      const double nx0 = px(lane.begin[k]), nx1 = px(lane.end[k]);
      if (nx1 - nx0 < min_px && nx0 - fold.x1 < min_px) {
        fold.folded += 1;
        fold.x1 = std::max(fold.x1, nx1);
        if (lane.kind[k] != fold.kind) fold.mixed = true;
        j = k + 1;
        continue;
      }
      j = k;
      break;
    }
    // A fold is never thinner than the fold threshold: it stands for real work.
    fold.x1 = std::max(fold.x1, fold.x0 + min_px);
    m_items.push_back(fold);
    i = j;
  }
}

void TimelineLayout::layoutMarkers(int row, const Lane1D& lane) {
  const size_t n = lane.index.size();
  size_t i = static_cast<size_t>(std::lower_bound(lane.begin.begin(), lane.begin.end(),
                                                  clampNs(m_t0)) - lane.begin.begin());
  const double view_end_t = m_t0 + m_viewWidth / m_scale;
  while (i < n && static_cast<double>(lane.begin[i]) <= view_end_t) {
    const double x = px(lane.begin[i]);
    m_markers.push_back({x, row, lane.index[i], lane.kind[i]});
    // One marker per pixel: skip the rest of this pixel column.
    const int64_t t_next = clampNs(m_t0 + (std::floor(x) + 1.0) / m_scale);
    i = gallop(lane.begin, i + 1, t_next);
  }
}

std::pair<size_t, size_t> TimelineLayout::rowItems(int row) const {
  if (!m_store || !current(*m_store) || row < 0 || static_cast<size_t>(row) >= m_rowItems.size()) return {0, 0};
  return m_rowItems[static_cast<size_t>(row)];
}

const TimelineDrawItem* TimelineLayout::itemAt(int row, double x) const {
  const auto [first, last] = rowItems(row);
  // Items of a row are in x order (the collectives over a computing lane in
  // a second run, drawn on top); pick the last one under x, so a collective
  // drawn over a fold wins. A row holds a few hundred items at most.
  const TimelineDrawItem* best = nullptr;
  for (size_t k = first; k < last; ++k) {
    const TimelineDrawItem& it = m_items[k];
    if (x >= it.x0 - 1.0 && x <= it.x1 + 1.0) best = &it;
  }
  return best;
}

const TimelineMarker* TimelineLayout::markerAt(int row, double x, double tolerance_px) const {
  if (!m_store || !current(*m_store) || row < 0 || static_cast<size_t>(row) >= m_rowMarkers.size()) return nullptr;
  const auto [first, last] = m_rowMarkers[static_cast<size_t>(row)];
  const TimelineMarker* best = nullptr;
  double best_d = tolerance_px;
  for (size_t k = first; k < last; ++k) {
    const double d = std::abs(m_markers[k].x - x);
    // Ties go to the later marker: major markers are laid out after minor ones.
    if (d <= best_d) {
      best_d = d;
      best = &m_markers[k];
    }
  }
  return best;
}

}  // namespace shardscope
