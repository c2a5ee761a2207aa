// What the timeline says under the pointer: an event's tooltip (its kind,
// lane, times, bytes, peers and dependencies), a folded box's, a stuck
// collective's and a collapsed band's. The view itself is timeline_view.cpp.
#include <QPointF>
#include <cmath>

#include "common/units.h"
#include "inspect/collective_peers.h"
#include "inspect/dependency_links.h"
#include "inspect/event_store.h"
#include "inspect/rank_symmetry.h"
#include "palette.h"
#include "quantity_text.h"
#include "timeline_plottable.h"
#include "timeline_view.h"
#include <qcustomplot.h>

namespace shardscope {

QString TimelineView::tooltipAt(const QPoint& pos) const {
  if (const int fold = collapsedBandAt(pos); fold >= 0)
    return tr("<b>%1</b><br>the same ops, bytes and times as rank %2 (group ids aside)<br><i>double-click to show "
              "each rank</i>")
        .arg(foldText(fold).toHtmlEscaped())
        .arg(m_layout.folds()[static_cast<size_t>(fold)].source);
  const QRect rect = m_plot->axisRect()->rect();
  if (!rect.contains(pos) || m_layout.rows().empty()) return {};
  const double y = m_plot->yAxis->pixelToCoord(pos.y());
  const int row = m_layout.rowAt(y);
  if (row < 0 || y < 0 || y > m_layout.totalHeight()) return {};
  const TimelineRow& r = m_layout.rows()[static_cast<size_t>(row)];
  if (std::abs(y - r.center()) > r.height * (TimelinePlottable::kBoxHeight / 2 + 0.05)) return {};
  const int rank = r.rank;
  const double x = pos.x() - rect.left();
  if (const TimelineMarker* m = m_layout.markerAt(row, x, 5.0)) return eventTooltip(rank, m->event);
  for (const StuckCollective& s : m_timeline->stuck())
    if (m_timeline->stuckRect(s).contains(QPointF(pos)))
      return tr("<b>stuck: %1</b><br>%2<br>from %3 ms until the run stopped")
          .arg(TimelinePlottable::waitingText(s).toHtmlEscaped(), eventTooltip(rank, s.event))
          .arg(static_cast<double>(s.begin_ns) / kNsPerMs, 0, 'f', 3);
  if (const TimelineDrawItem* item = m_layout.itemAt(row, x))
    return item->folded > 1 ? foldTooltip(*item) : eventTooltip(rank, item->event);
  return {};
}


QString TimelineView::peersLine(int rank, int32_t index) const {
  // Only for the selected collective: finding the peers scans every member's ops.
  const bool listed = std::any_of(m_peers.begin(), m_peers.end(),
                                  [&](const CollectivePeer& p) { return p.rank == rank && p.index == index; });
  if (!listed || m_peers.size() < 2) return {};
  const CollectivePeer* first = &m_peers.front();
  const CollectivePeer* last = first;
  const auto begin = [this](const CollectivePeer& p) { return m_store->events(p.rank)[static_cast<size_t>(p.index)].begin_ns; };
  for (const CollectivePeer& p : m_peers) {
    if (begin(p) < begin(*first)) first = &p;
    if (begin(p) > begin(*last)) last = &p;
  }
  return tr("the same collective on %1 ranks (outlined dashed): rank %2 entered last, %3 after rank %4")
      .arg(m_peers.size())
      .arg(last->rank)
      .arg(quantity_text::duration(begin(*last) - begin(*first)))
      .arg(first->rank);
}

QString TimelineView::eventTooltip(int rank, int32_t index) const {
  const Event e = m_store->eventAt(rank, static_cast<size_t>(index));  // a copied rank's: in its own groups
  const RunTrace& meta = m_store->meta();
  // Activation checkpointing's recompute is a forward inside backward: named as such.
  const bool recompute = e.kind == EventKind::Forward && (e.flags & kEventRecompute);
  QString title = recompute ? QStringLiteral("recompute (forward in backward)") : Palette::kindTitle(e.kind);
  if (e.block >= 0) title += QStringLiteral(" · ") + QString::fromStdString(m_store->blockName(e.block));
  if (e.bucket >= 0) title += QStringLiteral(" · bucket %1").arg(e.bucket);
  if (e.unit >= 0) title += QStringLiteral(" · unit %1").arg(e.unit);
  QStringList lines;
  lines << QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped());
  if (const auto& imported = meta.imported; imported && imported->text) {
    // An imported op: its own name first (a kernel's can be long: elided).
    QString name = QString::fromStdString(imported->text->name(rank, e.op));
    if (name.size() > 120) name = name.left(117) + QStringLiteral("…");
    lines << QStringLiteral("%1 <i>(%2)</i>")
                 .arg(name.toHtmlEscaped(), QString::fromStdString(imported->text->category(rank, e.op)).toHtmlEscaped());
  }
  lines << QStringLiteral("rank %1 · %2%3")
               .arg(rank)
               .arg(meta.imported ? rowTitle(rank, e.lane) : rowTitle(rank, e.lane) + QStringLiteral(" lane"))
               .arg(e.step >= 0 ? QStringLiteral(" · step %1").arg(e.step) : QString());
  if (isInstant(e.kind)) {
    lines << QStringLiteral("at %1").arg(quantity_text::ms(e.begin_ns));
  } else {
    lines << QStringLiteral("start %1 · duration <b>%2</b>").arg(quantity_text::ms(e.begin_ns), quantity_text::duration(e.end_ns - e.begin_ns));
  }
  if (e.kind == EventKind::GradReady && e.param >= 0 && static_cast<size_t>(e.param) < meta.param_names.size())
    lines << QStringLiteral("parameter %1").arg(QString::fromStdString(meta.param_names[static_cast<size_t>(e.param)]));
  if (e.kind == EventKind::Launch)
    lines << tr("%n kernel launch(es)", nullptr, static_cast<int>(e.value)) +
                 (e.seq > 0 ? tr(" and %n FSDP hook(s)", nullptr, e.seq) : QString()) +
                 tr(", at the hardware profile's host cost");
  if (e.bytes > 0)
    lines << QStringLiteral("bytes %1 (%2 B)").arg(quantity_text::sizeText(double(e.bytes), 2, ByteUnit::MiB)).arg(e.bytes);
  else if (e.flags & kEventSizeUnknown)
    lines << tr("size unknown: the trace gives no element counts (or shapes without a known dtype)");
  const bool collective = e.kind == EventKind::AllReduce || e.kind == EventKind::ReduceScatter ||
                          e.kind == EventKind::AllGather || e.kind == EventKind::AllToAll;
  const int64_t dur = e.end_ns - e.begin_ns;
  // Collectives record in `value` the ns spent waiting for the slowest peer.
  const int64_t wait = collective || e.kind == EventKind::Copy ? std::clamp<int64_t>(e.value, 0, dur) : 0;
  if (wait > 0)
    lines << QStringLiteral("waiting for peers %1 · transfer %2").arg(quantity_text::duration(wait), quantity_text::duration(dur - wait));
  if (collective && dur - wait > 0 && e.bytes > 0) {
    // nccl-tests' definitions: algbw = S / t; busbw scales by the ring's
    // traffic. t is the transfer, without the wait for peers.
    // n is the collective's own group (an HSDP shard or replica group), not the world.
    const int p = std::max(1, meta.groupSize(e) > 0 ? meta.groupSize(e) : m_store->rankCount());
    const double algbw = static_cast<double>(e.bytes) / static_cast<double>(dur - wait);  // bytes/ns = GB/s
    const double factor = busBandwidthFactor(e.kind, p);
    lines << QStringLiteral("algbw <b>%1 GB/s</b> · busbw %2 GB/s (ring, %3 ranks)")
                 .arg(algbw, 0, 'f', 2)
                 .arg(algbw * factor, 0, 'f', 2)
                 .arg(p);
  }
  if (const QString peers = peersLine(rank, index); !peers.isEmpty()) lines << peers;
  if (e.bucket >= 0) {
    for (const BucketInfo& b : meta.buckets) {
      if (b.index != e.bucket || b.params.empty()) continue;
      lines << QStringLiteral("bucket %1: %2 params, %3 … %4")
                   .arg(b.index)
                   .arg(b.params.size())
                   .arg(QString::fromStdString(b.params.front()), QString::fromStdString(b.params.back()));
    }
  }
  if (e.seq >= 0) {
    const CommGroup* g = meta.group(e.group);
    lines << QStringLiteral("collective #%1 in group %2").arg(e.seq).arg(g ? QString::fromStdString(g->name) : QString::number(e.group));
  }
  if (meta.imported && e.dep >= 0) lines << tr("<i>launched by a host op (select it to see the arrow)</i>");
  // Another machine's ranks: their times are node 0's clock as estimated at rendezvous.
  for (const RunTrace::NodeClock& c : meta.node_clocks)
    if (rank >= c.first_rank && rank < c.first_rank + c.ranks)
      lines << tr("<i>node %1's clock, aligned to node 0's within ±%2 (shortest of %3 pings): times "
                  "across nodes compare to that</i>")
                   .arg(c.node)
                   .arg(quantity_text::duration(c.uncertainty_ns))
                   .arg(c.pings);
  return lines.join(QStringLiteral("<br>"));
}

QString TimelineView::foldTooltip(const TimelineDrawItem& item) const {
  const QRect rect = m_plot->axisRect()->rect();
  const double t0 = m_plot->xAxis->pixelToCoord(rect.left() + item.x0) * kNsPerMs;
  const double t1 = m_plot->xAxis->pixelToCoord(rect.left() + item.x1) * kNsPerMs;
  return QStringLiteral("<b>%1 ops folded</b> (%2)<br>%3 – %4<br><i>zoom in to separate them</i>")
      .arg(item.folded)
      .arg(item.mixed ? tr("several kinds") : Palette::kindTitle(item.kind))
      .arg(quantity_text::ms(static_cast<int64_t>(t0)), quantity_text::ms(static_cast<int64_t>(t1)));
}

}  // namespace shardscope
