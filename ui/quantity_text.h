// Bytes and durations as the views' tooltips and labels write them: one home
// for "12.34 MiB", "1.234 ms" and the scale-picking duration ("850 ns",
// "12.5 µs", "3.40 ms"), over common/units.h's units.
#pragma once

#include <QString>
#include <cstdint>

#include "common/units.h"

namespace shardscope::quantity_text {

inline QString mib(int64_t bytes) { return QString::number(toMiB(bytes), 'f', 2) + QStringLiteral(" MiB"); }

inline QString ms(int64_t ns) { return QString::number(nsToMs(ns), 'f', 3) + QStringLiteral(" ms"); }

inline QString duration(int64_t ns) {
  if (ns < 10'000) return QStringLiteral("%1 ns").arg(ns);
  if (ns < 10'000'000) return QString::number(static_cast<double>(ns) / kNsPerUs, 'f', 1) + QStringLiteral(" µs");
  return QString::number(nsToMs(ns), 'f', 2) + QStringLiteral(" ms");
}

}  // namespace shardscope::quantity_text
