// Bytes and durations as the views' tooltips and labels write them: sizes are
// core's bytesText ("12.34 MiB", "1.5 GiB"; common/units.h), durations
// "1.234 ms" and the scale-picking duration ("850 ns", "12.5 µs", "3.40 ms").
#pragma once

#include <QString>
#include <cstdint>

#include "common/units.h"

namespace shardscope::quantity_text {

// common/units.h's bytesText as a QString: a view never picks a unit itself.
inline QString sizeText(double bytes, int decimals = 2, ByteUnit unit = ByteUnit::Auto) {
  return QString::fromStdString(bytesText(bytes, decimals, unit));
}

inline QString ms(int64_t ns) { return QString::number(nsToMs(ns), 'f', 3) + QStringLiteral(" ms"); }

inline QString duration(int64_t ns) {
  if (ns < 10'000) return QStringLiteral("%1 ns").arg(ns);
  if (ns < 10'000'000) return QString::number(static_cast<double>(ns) / kNsPerUs, 'f', 1) + QStringLiteral(" µs");
  return QString::number(nsToMs(ns), 'f', 2) + QStringLiteral(" ms");
}

}  // namespace shardscope::quantity_text
