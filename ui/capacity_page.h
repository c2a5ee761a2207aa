// The Capacity page: `shardscope-cli calc` in the window. Parameter count or
// model preset, ranks, memory per rank (and calc's other inputs) in; each
// stage's model-state GB per rank as bars against the capacity line, and calc's
// own answer text out. The arithmetic is core's answerCalc (cli/calc_command.h),
// the same call the CLI makes, so the page and the CLI cannot disagree.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QVector>
#include <memory>

#include "page.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QWidget;

namespace shardscope {

struct CalcAnswer;

class CapacityPage : public Page {
  Q_DECLARE_TR_FUNCTIONS(CapacityPage)
 public:
  explicit CapacityPage(QWidget* parent);
  ~CapacityPage() override;
  QString name() const override { return QStringLiteral("capacity"); }
  QString title() const override;
  QWidget* widget() const override { return m_widget; }
  QString unavailable() const override { return {}; }  // needs no run
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;

  // The inputs, as a user types them (model: a preset name, "" for the count).
  void setInputs(const QString& params, const QString& model, const QString& ranks, const QString& capacityGb,
                 const QString& shardGroup = {}, const QString& tp = QStringLiteral("1"));
  QString error() const;        // "" or the one error, naming the field
  QString answerText() const;   // calc's text for the inputs ("" on error)
  QVector<double> barGb() const;  // GB per rank per stage, in calc's order
  QStringList barStages() const;
  // What decides the answer when it is not model state: a layer that fits on
  // no rank ("" when every layer fits). The page leads with it, so does its figure.
  QString verdict() const { return m_verdict; }
  QString summaryText() const;  // the line above the chart, as plain text
  QCustomPlot* plot() const { return m_plot; }

 private:
  void recompute();
  void draw();

  QWidget* m_widget;
  QLineEdit* m_params;
  QComboBox* m_model;
  QLineEdit* m_ranks;
  QLineEdit* m_capacity;
  QLineEdit* m_shardGroup;
  QLineEdit* m_tp;
  QLabel* m_error;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QPlainTextEdit* m_text;
  std::unique_ptr<CalcAnswer> m_answer;
  QString m_verdict;
};

}  // namespace shardscope
