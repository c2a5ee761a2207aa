// The words every view and legend uses for a formula's prediction, so the
// memory view, compare views, figure legends and the Runs table say it alike.
#pragma once

#include <QString>

#include "inspect/run_prediction.h"

namespace shardscope {

// "predicted (ZeRO paper): 4 + 12/P = 7 B/param × N, model state"
QString predictionLegend(const RunPrediction& p);
// "3N·(P−1)/P = 2.250 N at P = 4 (20.00 MiB, N = 8.89 MiB)"
QString trafficFormulaText(const ExpectedTraffic& t);

}  // namespace shardscope
