#include "prediction_text.h"

#include <QCoreApplication>

namespace shardscope {

QString predictionLegend(const RunPrediction& p) {
  return QCoreApplication::translate("Prediction", "predicted (%1): %2 = %3 B/param × N, model state")
      .arg(QString::fromStdString(formulaSource(p.config)))
      .arg(QString::fromStdString(p.model_state_formula))
      .arg(p.bytes_per_param, 0, 'g', 4);
}

QString trafficFormulaText(const ExpectedTraffic& t) { return QString::fromStdString(t.valueText()); }

}  // namespace shardscope
