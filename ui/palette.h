// The views' shared colours: Okabe–Ito (colour-blind safe) for event kinds and
// memory categories, and the short labels boxes carry. One place, so the
// timeline, the memory ledger and exported figures always agree.
#pragma once

#include <QColor>
#include <QString>

#include "trace/event.h"
#include "inspect/unit_states.h"

namespace shardscope {

// Light is the default and what figures always use; Dark maps every neutral
// colour (greys, black, white) to its counterpart on a dark canvas and keeps
// the Okabe–Ito hues, so kinds and categories read the same in both.
enum class Theme { Light, Dark };

class Palette {
 public:
  static void setTheme(Theme theme);  // before views are built (the app restarts to switch)
  static Theme theme();
  // A neutral colour written for the light theme, as the current theme shows
  // it: unchanged in Light, lightness mirrored in Dark; saturated colours pass.
  static QColor themed(const QColor& light);
  static QColor themed(const QColor& light, Theme theme);
  static QColor kind(EventKind kind);
  static QColor category(Category category);
  static QColor textOn(const QColor& fill);  // black or white, whichever reads better
  static QColor foldedMixed();               // folded boxes of several kinds
  static QColor background();
  static QColor rankBand(int rank);          // alternating row-group shading
  // Neutral colours as the current theme shows them; QCustomPlot objects are
  // given the Light ones (PlotStyle::followTheme maps them).
  static QColor grid(Theme theme = Palette::theme());
  static QColor cursor();  // the same hue in both themes
  static QColor selection(Theme theme = Palette::theme());  // the selected op's outline and its dependency arrows
  static QColor step(Theme theme = Palette::theme());
  // FSDP unit states: the colour of the op that puts a unit in the state.
  static QColor unitState(UnitState state, Theme theme = Palette::theme());
  static QString unitStateTitle(UnitState state);
  // The n-th colour of a series of runs (loss overlays).
  static QColor series(int n);
  // Long name for legends and tooltips ("all-reduce").
  static QString kindTitle(EventKind kind);
  // Short prefix for box labels ("AR", "fwd").
  static QString kindShort(EventKind kind);
};

}  // namespace shardscope
