// The Capacity page: `shardscope-cli calc` in the window. Parameter count or
// model preset, ranks, memory per rank (and calc's other inputs) in; each
// stage's model-state GB per rank as bars against the capacity line, and calc's
// own answer text out. With pipeline stages given it is calc's stage plan: a
// stacked bar per pipeline stage (model states, activations in flight,
// buffers). The arithmetic is core's answerCalc / answerCalcStages
// (cli/calc_command.h, cli/calc_stages.h), the calls the CLI makes, so the
// page and the CLI cannot disagree.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <QVector>
#include <memory>
#include <thread>

#include "page.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QWidget;

namespace shardscope {

struct CalcAnswer;
struct CalcStagesAnswer;
class ScheduleCompareTable;

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
  // The stage plan's inputs (pp "": the model-state table; schedule,
  // recompute and strategy as calc spells them; microbatches "": 1).
  void setStageInputs(const QString& pp, const QString& microbatches, const QString& schedule = QStringLiteral("1f1b"),
                      const QString& recompute = QStringLiteral("none"), bool sequenceParallel = false,
                      const QString& strategy = QStringLiteral("ddp"));
  // The stage plan on screen (null: the model-state table, or an error).
  const CalcStagesAnswer* stagePlan() const { return m_stages.get(); }
  QVector<double> stagePeakGb() const;  // each pipeline stage's peak, GB per GPU
  // Runs the stage plan's config under GPipe, 1F1B and interleaved on the
  // meta backend (calc --compare-schedules) off the GUI thread; the table
  // fills when they finish. A change of the inputs drops a stale answer.
  void compareSchedules();
  bool comparing() const { return m_comparing; }
  const ScheduleCompareTable* compareTable() const { return m_compareTable; }
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
  QLineEdit* m_pp;
  QLineEdit* m_microbatches;
  QComboBox* m_schedule;
  QComboBox* m_recompute;
  QComboBox* m_strategy;
  QCheckBox* m_sp;
  QLabel* m_error;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QPlainTextEdit* m_text;
  std::unique_ptr<CalcAnswer> m_answer;
  std::unique_ptr<CalcStagesAnswer> m_stages;
  std::vector<std::string> m_stageArgs;  // calc's flags of the plan on screen
  QPushButton* m_compare;
  ScheduleCompareTable* m_compareTable;
  std::thread m_compareThread;
  std::unique_ptr<QObject> m_compareContext;  // receives the worker's answer; gone with the page
  int m_generation = 0;                       // bumped by every recompute: an older answer is stale
  bool m_comparing = false;
  QString m_verdict;
};

}  // namespace shardscope
