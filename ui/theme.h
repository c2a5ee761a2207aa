// The app's light and dark themes in one place: Palette's colours, the
// widgets' QPalette, the tone of secondary labels, and every plot (through
// PlotStyle::followTheme). Switching is live; figures stay light either way.
#pragma once

#include "palette.h"

class QWidget;

namespace shardscope {

// Secondary text: Note for explanations (dark grey on light), Muted for
// placeholders and hints (mid grey). Set once on a label; the theme colours it.
enum class Tone { Note, Muted };
void setTone(QWidget* label, Tone tone);

// Palette, the application's QPalette and tone style sheet; then every
// QCustomPlot of every top-level window is re-themed and replotted.
void applyTheme(Theme theme);

}  // namespace shardscope
