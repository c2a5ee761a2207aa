// The timeline's legend entries, one home for the single-run timeline and the
// compared one: each kind drawn (in a step's order), then the marks a paint
// drew that are no kind of their own (a collective's waiting part, folds, a
// hang's stuck collective).
#pragma once

#include <cstdint>
#include <vector>

#include "trace/event.h"

class QCustomPlot;

namespace shardscope {

struct TimelineLegendMarks {
  uint32_t kinds = 0;  // bit k: EventKind k is laid out
  bool waits = false;  // the pale part of a collective that waited for its peers
  bool folds = false;  // striped boxes of several short ops
  bool stuck = false;  // a hung run's stuck collectives
  bool operator==(const TimelineLegendMarks&) const = default;
};

// Every kind the legend can name, in its order.
const std::vector<EventKind>& timelineLegendOrder();

// Adds one empty plottable per entry to plot's first axis rect (its only job
// is an icon and a name); the caller removes the previous entries.
void addTimelineLegendEntries(QCustomPlot* plot, const TimelineLegendMarks& marks);

}  // namespace shardscope
