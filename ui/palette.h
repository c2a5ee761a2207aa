// The views' shared colours: Okabe–Ito (colour-blind safe) for event kinds and
// memory categories, and the short labels boxes carry. One place, so the
// timeline, the memory ledger and exported figures always agree.
#pragma once

#include <QColor>
#include <QString>

#include "trace/event.h"
#include "unit_states.h"

namespace shardscope {

class Palette {
 public:
  static QColor kind(EventKind kind);
  static QColor category(Category category);
  static QColor textOn(const QColor& fill);  // black or white, whichever reads better
  static QColor foldedMixed();               // folded boxes of several kinds
  static QColor background();
  static QColor rankBand(int rank);          // alternating row-group shading
  static QColor grid();
  static QColor cursor();
  static QColor selection();  // the selected op's outline and its dependency arrows
  static QColor step();
  // FSDP unit states: the colour of the op that puts a unit in the state.
  static QColor unitState(UnitState state);
  static QString unitStateTitle(UnitState state);
  // The n-th colour of a series of runs (loss overlays).
  static QColor series(int n);
  // Long name for legends and tooltips ("all-reduce").
  static QString kindTitle(EventKind kind);
  // Short prefix for box labels ("AR", "fwd").
  static QString kindShort(EventKind kind);
};

}  // namespace shardscope
