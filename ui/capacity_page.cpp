#include "capacity_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTextDocumentFragment>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "capacity_stage_chart.h"
#include "cli/calc_command.h"
#include "cli/calc_stages.h"
#include "common/errors.h"
#include "config/kinds.h"
#include "config/model_presets.h"
#include "figure_export.h"
#include "plot_style.h"
#include "schedule_compare_table.h"
#include "theme.h"

namespace shardscope {

namespace {

// calc's flags as this page's fields call them.
// Longer flags first: "--pp-schedule" before "--pp".
const std::pair<const char*, const char*> kFieldWords[] = {
    {"--capacity-gb", "Capacity (GB)"},   {"--shard-group", "Shard group"},
    {"--params", "Parameters"},           {"--model", "Model"},
    {"--ranks", "Ranks"},                 {"--tp", "Tensor parallel"},
    {"--pp-schedule", "Schedule"},        {"--microbatches", "Microbatches"},
    {"--activation-checkpointing", "Recompute"}, {"--strategy", "Strategy"},
    {"--pp", "Pipeline stages"},          {"--sp", "Sequence parallel"}};

QString fieldWords(QString message) {
  message.remove(QStringLiteral(" (see calc --help)"));
  for (const auto& [flag, label] : kFieldWords) message.replace(QLatin1String(flag), QLatin1String(label));
  if (!message.isEmpty()) message[0] = message[0].toUpper();
  return message;
}

const QColor kFits(0x00, 0x9E, 0x73);     // Okabe–Ito bluish green: fits the capacity
const QColor kTooBig(0xD5, 0x5E, 0x00);   // vermillion: does not fit

}  // namespace

CapacityPage::CapacityPage(QWidget* parent)
    : m_widget(new QWidget(parent)),
      m_params(new QLineEdit(QStringLiteral("70e9"), m_widget)),
      m_model(new QComboBox(m_widget)),
      m_ranks(new QLineEdit(m_widget)),
      m_capacity(new QLineEdit(QStringLiteral("80"), m_widget)),
      m_shardGroup(new QLineEdit(m_widget)),
      m_tp(new QLineEdit(QStringLiteral("1"), m_widget)),
      m_pp(new QLineEdit(m_widget)),
      m_microbatches(new QLineEdit(m_widget)),
      m_schedule(new QComboBox(m_widget)),
      m_recompute(new QComboBox(m_widget)),
      m_strategy(new QComboBox(m_widget)),
      m_sp(new QCheckBox(m_widget)),
      m_error(new QLabel(m_widget)),
      m_summary(new QLabel(m_widget)),
      m_plot(new QCustomPlot(m_widget)),
      m_text(new QPlainTextEdit(m_widget)),
      m_compare(new QPushButton(m_widget)),
      m_compareTable(new ScheduleCompareTable(m_widget)),
      m_compareContext(std::make_unique<QObject>()) {
  m_widget->setObjectName(QStringLiteral("capacityPage"));
  m_params->setObjectName(QStringLiteral("capacityParams"));
  m_model->setObjectName(QStringLiteral("capacityModel"));
  m_ranks->setObjectName(QStringLiteral("capacityRanks"));
  m_capacity->setObjectName(QStringLiteral("capacityGb"));
  m_shardGroup->setObjectName(QStringLiteral("capacityShardGroup"));
  m_tp->setObjectName(QStringLiteral("capacityTp"));
  m_error->setObjectName(QStringLiteral("capacityError"));
  m_params->setPlaceholderText(tr("e.g. 70e9, 7B, 124M"));
  m_params->setToolTip(tr("Parameter count: 124M, 7B, 7e9, 70B, 1.5T or a plain number"));
  m_model->addItem(tr("(the parameter count)"), QString());
  for (const ModelPreset& p : modelPresets()) m_model->addItem(QString::fromStdString(p.name), QString::fromStdString(p.name));
  m_model->setToolTip(tr("A model preset with its published shape (instead of the parameter count)"));
  m_ranks->setPlaceholderText(tr("empty: the smallest for ZeRO-3"));
  m_ranks->setToolTip(tr("Data-parallel ranks P; left empty, the page finds the smallest P at which ZeRO-3 fits"));
  m_capacity->setToolTip(tr("Memory per rank in GB (1 GB = 1e9 bytes)"));
  m_shardGroup->setPlaceholderText(tr("empty: no hsdp row"));
  m_shardGroup->setToolTip(tr("Add an hsdp row: shard within groups of G ranks (G divides the ranks)"));
  m_tp->setToolTip(tr("Tensor-parallel ranks T (T divides the ranks): one TP slice, sharded over P/T ranks"));
  m_pp->setObjectName(QStringLiteral("capacityPp"));
  m_pp->setPlaceholderText(tr("empty: model states only"));
  m_pp->setToolTip(tr("Pipeline stages S: the plan per stage, model states and the activations its schedule keeps "
                      "in flight (a model preset; Ranks is then every GPU, T x S x data-parallel ranks)"));
  m_microbatches->setObjectName(QStringLiteral("capacityMicrobatches"));
  m_microbatches->setPlaceholderText(tr("empty: 1"));
  m_microbatches->setToolTip(tr("Microbatches M per step, one sample each"));
  m_schedule->setObjectName(QStringLiteral("capacitySchedule"));
  for (const std::string& n : pipelineScheduleNames()) m_schedule->addItem(QString::fromStdString(n));
  m_schedule->setCurrentText(QStringLiteral("1f1b"));
  m_recompute->setObjectName(QStringLiteral("capacityRecompute"));
  for (const std::string& n : checkpointingNames()) m_recompute->addItem(QString::fromStdString(n));
  m_strategy->setObjectName(QStringLiteral("capacityStrategy"));
  for (const char* n : {"ddp", "zero1", "zero3", "fsdp"}) m_strategy->addItem(QString::fromLatin1(n));
  m_strategy->setToolTip(tr("The data-parallel axis's strategy under pipeline stages"));
  m_sp->setObjectName(QStringLiteral("capacitySp"));
  m_sp->setText(tr("sequence parallel"));
  m_sp->setToolTip(tr("Split the norms' and residual activations over the TP group (Korthikanti et al. 2022)"));

  auto* box = new QVBoxLayout(m_widget);
  auto* inputs = new QHBoxLayout;
  auto* left = new QFormLayout;
  auto* right = new QFormLayout;
  left->addRow(tr("Parameters"), m_params);
  left->addRow(tr("Model"), m_model);
  left->addRow(tr("Ranks"), m_ranks);
  right->addRow(tr("Capacity (GB)"), m_capacity);
  right->addRow(tr("Shard group"), m_shardGroup);
  right->addRow(tr("Tensor parallel"), m_tp);
  auto* stages = new QFormLayout;
  stages->addRow(tr("Pipeline stages"), m_pp);
  stages->addRow(tr("Microbatches"), m_microbatches);
  stages->addRow(tr("Schedule"), m_schedule);
  auto* more = new QFormLayout;
  more->addRow(tr("Strategy"), m_strategy);
  more->addRow(tr("Recompute"), m_recompute);
  more->addRow(QString(), m_sp);
  inputs->addLayout(left, 1);
  inputs->addLayout(right, 1);
  // The stage plan's fields on a row of their own: four columns side by side
  // would widen the page past a 1280-pixel screen.
  auto* stageInputs = new QHBoxLayout;
  stageInputs->addLayout(stages, 1);
  stageInputs->addLayout(more, 1);
  box->addLayout(inputs);
  box->addLayout(stageInputs);
  m_error->setWordWrap(true);
  m_error->setStyleSheet(QStringLiteral("color: #D55E00"));
  m_error->hide();
  box->addWidget(m_error);
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  m_summary->setObjectName(QStringLiteral("capacitySummary"));
  box->addWidget(m_summary);
  PlotStyle::styleAxes(m_plot);
  m_plot->setMinimumHeight(160);
  box->addWidget(m_plot, 3);
  m_text->setReadOnly(true);
  m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_text->setObjectName(QStringLiteral("capacityText"));
  m_text->setToolTip(tr("What shardscope-cli calc prints for these inputs"));
  box->addWidget(m_text, 2);
  m_compare->setObjectName(QStringLiteral("capacityCompareSchedules"));
  m_compare->setText(tr("Compare schedules"));
  m_compare->setToolTip(tr("Run this plan's config under GPipe, 1F1B and interleaved on the meta backend (modeled "
                           "clock, one step each): step time, bubble and the most loaded stage's peak, measured "
                           "beside the plan"));
  box->addWidget(m_compare, 0, Qt::AlignLeft);
  box->addWidget(m_compareTable, 1);
  QObject::connect(m_compare, &QPushButton::clicked, m_widget, [this] { compareSchedules(); });

  for (QLineEdit* edit : {m_params, m_ranks, m_capacity, m_shardGroup, m_tp, m_pp, m_microbatches})
    QObject::connect(edit, &QLineEdit::textChanged, m_widget, [this] { recompute(); });
  for (QComboBox* box : {m_schedule, m_recompute, m_strategy})
    QObject::connect(box, &QComboBox::currentIndexChanged, m_widget, [this] { recompute(); });
  QObject::connect(m_sp, &QCheckBox::toggled, m_widget, [this] { recompute(); });
  QObject::connect(m_model, &QComboBox::currentIndexChanged, m_widget, [this] {
    m_params->setEnabled(m_model->currentIndex() == 0);
    recompute();
  });
  recompute();
}

CapacityPage::~CapacityPage() {
  // The worker posts its answer to m_compareContext: let it finish, then drop
  // the context and with it any answer still queued.
  if (m_compareThread.joinable()) m_compareThread.join();
  m_compareContext.reset();
}

void CapacityPage::compareSchedules() {
  if (m_comparing || !m_stages || !m_stages->plan) return;
  if (m_compareThread.joinable()) m_compareThread.join();  // the last one has posted its answer
  m_comparing = true;
  m_compare->setEnabled(false);
  m_compareTable->setStatus(tr("Running GPipe, 1F1B and interleaved on the meta backend …"));
  std::vector<std::string> args = m_stageArgs;
  args.emplace_back("--compare-schedules");
  const int generation = m_generation;
  QObject* context = m_compareContext.get();
  m_compareThread = std::thread([this, args, generation, context] {
    auto answer = std::make_shared<CalcStagesAnswer>();
    QString error;
    try {
      *answer = answerCalcStages(args);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    QMetaObject::invokeMethod(
        context,
        [this, answer, error, generation] {
          m_comparing = false;
          m_compare->setEnabled(m_stages && m_stages->plan);
          if (generation != m_generation) return;  // the inputs changed meanwhile
          if (!error.isEmpty() || !answer->schedules) m_compareTable->setStatus(fieldWords(error));
          else m_compareTable->setComparison(*answer->schedules);
        },
        Qt::QueuedConnection);
  });
}

QString CapacityPage::title() const { return tr("Capacity"); }

void CapacityPage::setInputs(const QString& params, const QString& model, const QString& ranks,
                             const QString& capacityGb, const QString& shardGroup, const QString& tp) {
  const QSignalBlocker b1(m_params), b2(m_model), b3(m_ranks), b4(m_capacity), b5(m_shardGroup), b6(m_tp);
  m_params->setText(params);
  const int at = m_model->findData(model);
  m_model->setCurrentIndex(at < 0 ? 0 : at);
  m_params->setEnabled(m_model->currentIndex() == 0);
  m_ranks->setText(ranks);
  m_capacity->setText(capacityGb);
  m_shardGroup->setText(shardGroup);
  m_tp->setText(tp);
  recompute();
}

void CapacityPage::setStageInputs(const QString& pp, const QString& microbatches, const QString& schedule,
                                  const QString& recompute, bool sequenceParallel, const QString& strategy) {
  const QSignalBlocker b1(m_pp), b2(m_microbatches), b3(m_schedule), b4(m_recompute), b5(m_sp), b6(m_strategy);
  m_pp->setText(pp);
  m_microbatches->setText(microbatches);
  m_schedule->setCurrentText(schedule);
  m_recompute->setCurrentText(recompute);
  m_sp->setChecked(sequenceParallel);
  m_strategy->setCurrentText(strategy);
  this->recompute();
}

QVector<double> CapacityPage::stagePeakGb() const {
  QVector<double> out;
  if (m_stages && m_stages->plan)
    for (const StagePlan& s : m_stages->plan->stages) out << double(s.peakBytes()) / kBytesPerGb;
  return out;
}

QString CapacityPage::error() const {
  return m_error->isVisible() || (!m_answer && !m_stages) ? m_error->text() : QString();
}
QString CapacityPage::answerText() const {
  if (m_stages) return QString::fromStdString(m_stages->text);
  return m_answer ? QString::fromStdString(m_answer->text) : QString();
}

QString CapacityPage::summaryText() const { return QTextDocumentFragment::fromHtml(m_summary->text()).toPlainText(); }

QVector<double> CapacityPage::barGb() const {
  QVector<double> out;
  if (m_answer && !m_answer->zero3_never)
    for (const StageCapacity& s : m_answer->report.stages) out << static_cast<double>(s.bytes_per_rank) / kBytesPerGb;
  return out;
}

QStringList CapacityPage::barStages() const {
  QStringList out;
  if (m_answer && !m_answer->zero3_never)
    for (const StageCapacity& s : m_answer->report.stages) out << QString::fromStdString(strategyName(s.stage));
  return out;
}

void CapacityPage::recompute() {
  // The fields become calc's own flags, so calc's parser judges them.
  std::vector<std::string> args;
  const auto flag = [&args](const char* name, const QString& value) {
    args.emplace_back(name);
    args.push_back(value.trimmed().toStdString());
  };
  const QString model = m_model->currentData().toString();
  if (!model.isEmpty()) flag("--model", model);
  else if (!m_params->text().trimmed().isEmpty()) flag("--params", m_params->text());
  if (!m_ranks->text().trimmed().isEmpty()) flag("--ranks", m_ranks->text());
  flag("--capacity-gb", m_capacity->text());
  if (!m_shardGroup->text().trimmed().isEmpty()) flag("--shard-group", m_shardGroup->text());
  if (!m_tp->text().trimmed().isEmpty()) flag("--tp", m_tp->text());
  // Pipeline stages given: calc's stage plan, with the stage fields as its flags.
  const bool staged = !m_pp->text().trimmed().isEmpty();
  for (QWidget* field : std::initializer_list<QWidget*>{m_microbatches, m_schedule, m_recompute, m_strategy, m_sp})
    field->setEnabled(staged);
  if (staged) {
    flag("--pp", m_pp->text());
    if (!m_microbatches->text().trimmed().isEmpty()) flag("--microbatches", m_microbatches->text());
    flag("--pp-schedule", m_schedule->currentText());
    flag("--activation-checkpointing", m_recompute->currentText());
    flag("--strategy", m_strategy->currentText());
    flag("--sp", m_sp->isChecked() ? QStringLiteral("on") : QStringLiteral("off"));
  }

  for (QLineEdit* edit : {m_params, m_ranks, m_capacity, m_shardGroup, m_tp, m_pp, m_microbatches}) edit->setStyleSheet({});
  m_model->setStyleSheet({});
  m_stages.reset();
  m_answer.reset();
  ++m_generation;
  m_stageArgs = args;
  m_compareTable->setStatus({});
  try {
    if (model.isEmpty() && m_params->text().trimmed().isEmpty())
      throw ConfigError("--params: enter a parameter count (e.g. 70e9, 7B) or pick a model preset");
    if (staged && model.isEmpty())
      throw ConfigError("--model: pick a model preset; a stage plan needs the model's shape (layers, hidden size, "
                        "heads), not only its parameter count");
    if (staged) m_stages = std::make_unique<CalcStagesAnswer>(answerCalcStages(args));
    else m_answer = std::make_unique<CalcAnswer>(answerCalc(parseCalcRequest(args)));
    m_error->clear();
    m_error->hide();
  } catch (const ConfigError& e) {
    m_answer.reset();
    const QString message = QString::fromUtf8(e.what());
    // Outline the field the message names first.
    qsizetype first = -1;
    QWidget* named = nullptr;
    const std::pair<const char*, QWidget*> fields[] = {
        {"--capacity-gb", m_capacity},   {"--shard-group", m_shardGroup}, {"--params", m_params},
        {"--model", m_model},            {"--ranks", m_ranks},            {"--tp", m_tp},
        {"--pp-schedule", m_schedule},   {"--microbatches", m_microbatches}, {"--pp", m_pp}};
    for (const auto& [name, widget] : fields) {
      const qsizetype at = message.indexOf(QLatin1String(name));
      if (at >= 0 && (first < 0 || at < first)) first = at, named = widget;
    }
    if (named) named->setStyleSheet(QStringLiteral("border: 1px solid #D55E00"));
    m_error->setText(fieldWords(message));
    m_error->show();
  }
  m_compare->setVisible(staged);
  m_compare->setEnabled(!m_comparing && m_stages && m_stages->plan);
  draw();
}

void CapacityPage::draw() {
  m_plot->clearPlottables();
  m_plot->clearItems();
  m_text->setPlainText(answerText());
  m_verdict.clear();
  if (m_stages && m_stages->plan) {
    const ParallelPlan& plan = *m_stages->plan;
    const StagePlan& loaded = plan.mostLoaded();
    const double capacity = plan.capacity_bytes / kBytesPerGb;
    m_summary->setText(tr("TP %1 x PP %2 x DP %3: stage %4 is the most loaded, %5 GB of %6 GB per GPU (%7 microbatches "
                          "in flight): %8.")
                           .arg(plan.config.tp)
                           .arg(plan.config.pp)
                           .arg(plan.config.dataParallelSize())
                           .arg(loaded.stage)
                           .arg(double(loaded.peakBytes()) / kBytesPerGb, 0, 'f', 1)
                           .arg(capacity)
                           .arg(loaded.in_flight)
                           .arg(plan.fits() ? tr("fits") : tr("does not fit"))
                           .toHtmlEscaped());
    drawStagePlan(m_plot, plan);
    return;
  }
  if (!m_answer || m_answer->zero3_never) {
    m_summary->setText(m_answer ? QString::fromStdString(m_answer->text).trimmed() : QString());
    m_plot->replot();
    return;
  }
  const CapacityReport& r = m_answer->report;
  const double capacity = r.input.capacity_bytes / kBytesPerGb;
  // What decides the answer leads: a layer no data-parallel sharding can split
  // makes every stage's "fits" moot, whatever P.
  if (const LayerFit& layer = m_answer->layer; !layer.fits) {
    m_verdict = tr("A single layer does not fit %1 GB per rank: one block's gathered bf16 parameters and unsharded "
                   "bf16 gradients are %2 GB on whichever rank computes it, at any number of ranks. Data parallelism "
                   "cannot split a layer; tensor parallelism does")
                    .arg(capacity)
                    .arg(static_cast<double>(layer.bytes) / kBytesPerGb, 0, 'f', 2);
    m_verdict += layer.smallest_tp > 0
                     ? tr(" (Tensor parallel %1 is the smallest that fits), or pipeline parallelism.").arg(layer.smallest_tp)
                     : tr(" no further here (no split up to the %1 key/value heads fits): pipeline parallelism is the "
                          "other way.")
                           .arg(layer.max_tp);
  }
  QString summary = tr("%1 ranks%2: ").arg(r.input.ranks).arg(m_answer->ranks_given ? QString() : tr(" (the smallest for ZeRO-3)"));
  summary += r.smallest_fitting_stage
                 ? tr("%1 is the least sharding that fits %2 GB per rank")
                       .arg(QString::fromStdString(strategyName(*r.smallest_fitting_stage)))
                       .arg(capacity)
                 : tr("no stage fits %1 GB per rank").arg(capacity);
  if (r.zero3_min_ranks > 0) summary += tr("; ZeRO-3 fits from %1 ranks up").arg(r.zero3_min_ranks);
  summary += QLatin1Char('.');
  if (!m_verdict.isEmpty()) {
    summary = tr("model state alone: ") + summary;
    m_summary->setText(QStringLiteral("<b style=\"color:#D55E00\">%1</b><br>%2").arg(m_verdict.toHtmlEscaped(),
                                                                                    summary.toHtmlEscaped()));
  } else {
    m_summary->setText(summary.toHtmlEscaped());
  }

  QVector<double> ticks, fits, tooBig;
  QVector<QString> labels;
  double top = capacity;
  for (int i = 0; i < static_cast<int>(r.stages.size()); ++i) {
    const StageCapacity& s = r.stages[static_cast<size_t>(i)];
    const double gb = static_cast<double>(s.bytes_per_rank) / kBytesPerGb;
    ticks << i + 1;
    labels << QString::fromStdString(strategyName(s.stage));
    fits << (s.fits ? gb : 0.0);
    tooBig << (s.fits ? 0.0 : gb);
    top = std::max(top, gb);
    auto* value = new QCPItemText(m_plot);
    value->position->setCoords(i + 1, gb);
    value->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    // Per parameter of the whole model, as the run's views say it (under TP the slice's figure / T).
    value->setText(tr("%1 GB\n%2 B/param").arg(gb, 0, 'f', gb < 10 ? 2 : 1).arg(s.bytes_per_model_param, 0, 'f', 2));
    value->setFont(QFont(m_plot->font().family(), 8));
    value->setClipToAxisRect(false);
  }
  const auto bars = [this, &ticks](const QVector<double>& values, const QColor& colour, const QString& name) {
    auto* b = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    b->setData(ticks, values);
    b->setWidth(0.6);
    b->setBrush(colour);
    b->setPen(QPen(colour.darker(130)));
    b->setName(name);
  };
  bars(fits, kFits, tr("fits"));
  bars(tooBig, kTooBig, tr("does not fit"));
  // The capacity as a dashed line across the chart, named in the legend.
  auto* line = new QCPGraph(m_plot->xAxis, m_plot->yAxis);
  line->setData(QVector<double>{0.4, ticks.size() + 0.6}, QVector<double>{capacity, capacity});
  line->setPen(QPen(QColor(0x33, 0x33, 0x33), 1.5, Qt::DashLine));
  line->setName(tr("capacity %1 GB").arg(capacity));

  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  ticker->addTicks(ticks, labels);
  m_plot->xAxis->setTicker(ticker);
  PlotStyle::styleCategoryAxis(m_plot->xAxis);
  m_plot->xAxis->setRange(0.4, ticks.size() + 0.6);
  m_plot->yAxis->setRange(0, top * 1.3);  // room for the value labels
  m_plot->yAxis->setLabel(tr("GB per rank"));
  m_plot->legend->setVisible(true);
  PlotStyle::styleLegendRow(m_plot, m_plot->font());
  PlotStyle::updateLegendRow(m_plot, true);  // a row above the bars, never over them
  m_plot->replot();
}

bool CapacityPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  // The figure's title says what decides the answer, as the page does.
  QString title = m_verdict;
  if (title.isEmpty()) title = m_summary->text().isEmpty() ? tr("Model-state memory per rank by stage") : summaryText();
  if (m_stages) title = summaryText();
  return FigureExport::write(path, title, subtitle, {{m_plot, 1.0}}, width, height, error);
}

}  // namespace shardscope
