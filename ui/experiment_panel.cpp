#include "experiment_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>
#include <limits>

#include "analysis/formulas.h"
#include "common/errors.h"
#include "model/model_spec.h"

namespace shardscope {

namespace {

QSpinBox* intBox(int lo, int hi, const QString& tip, QWidget* parent) {
  auto* box = new QSpinBox(parent);
  box->setRange(lo, hi);
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}

QDoubleSpinBox* doubleBox(double lo, double hi, int decimals, double step, const QString& tip, QWidget* parent) {
  auto* box = new QDoubleSpinBox(parent);
  box->setRange(lo, hi);
  box->setDecimals(decimals);
  box->setSingleStep(step);
  box->setToolTip(tip);
  return box;
}

QGroupBox* group(const QString& title, QFormLayout** form, QWidget* parent) {
  auto* g = new QGroupBox(title, parent);
  *form = new QFormLayout(g);
  (*form)->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  (*form)->setLabelAlignment(Qt::AlignRight);
  (*form)->setContentsMargins(8, 6, 8, 6);
  (*form)->setVerticalSpacing(4);
  return g;
}

}  // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
  m_strategy = new QComboBox(this);
  m_strategy->addItems({"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"});
  m_strategy->setToolTip(tr("--strategy: how model state is replicated or sharded across ranks"));
  m_ranks = intBox(0, 1024, tr("--ranks: data-parallel ranks (CPU threads), 1..64"), this);
  m_layers = intBox(0, 4096, tr("--layers: residual MLP blocks (the FSDP units), 1..256"), this);
  m_hidden = intBox(0, 65536, tr("--hidden: width D; each block's inner width is 4D; 8..8192"), this);
  m_batch = intBox(0, 1 << 22, tr("--batch: global batch, a multiple of --ranks"), this);
  m_steps = intBox(0, 1'000'000, tr("--steps: training steps"), this);
  m_bucketMb = doubleBox(0, 100000, 2, 1, tr("--bucket-mb: DDP bucket cap in MiB (PyTorch bucket_cap_mb)"), this);
  m_firstBucketMb = doubleBox(0, 100000, 2, 0.5, tr("--first-bucket-mb: cap of DDP's first bucket in MiB"), this);
  m_lr = doubleBox(0, 100, 6, 1e-4, tr("--lr: AdamW learning rate"), this);
  m_seed = intBox(0, std::numeric_limits<int>::max(), tr("--seed: data, init and teacher seed"), this);
  m_timeoutMs = intBox(0, 10'000'000, tr("--timeout-ms: collective fingerprint / readiness timeout"), this);
  m_timeoutMs->setSuffix(tr(" ms"));
  m_bucketMb->setSuffix(tr(" MiB"));
  m_firstBucketMb->setSuffix(tr(" MiB"));
  // Object names follow the CLI flags (tests and style sheets find fields by them).
  const std::pair<QWidget*, const char*> names[] = {
      {m_strategy, "strategy"}, {m_ranks, "ranks"}, {m_layers, "layers"}, {m_hidden, "hidden"},
      {m_batch, "batch"}, {m_steps, "steps"}, {m_bucketMb, "bucket-mb"}, {m_firstBucketMb, "first-bucket-mb"},
      {m_lr, "lr"}, {m_seed, "seed"}, {m_timeoutMs, "timeout-ms"}};
  for (const auto& [widget, name] : names) widget->setObjectName(QString::fromLatin1(name));
  m_inject = new QCheckBox(tr("rank skips a block"), this);
  m_inject->setToolTip(tr("--inject-branch R:L: a rank-dependent branch. DDP then hangs on a bucket; "
                          "ShardScope reports the ranks, op and bucket instead."));
  m_injectRank = intBox(0, 1024, tr("rank that takes the branch"), this);
  m_injectBlock = intBox(0, 4096, tr("block it skips"), this);

  QFormLayout* form = nullptr;
  auto* strategy_box = group(tr("Strategy"), &form, this);
  form->addRow(tr("strategy"), m_strategy);
  form->addRow(tr("ranks"), m_ranks);
  auto* model_box = group(tr("Model"), &form, this);
  form->addRow(tr("layers"), m_layers);
  form->addRow(tr("hidden"), m_hidden);
  auto* train_box = group(tr("Training"), &form, this);
  form->addRow(tr("global batch"), m_batch);
  form->addRow(tr("steps"), m_steps);
  form->addRow(tr("learning rate"), m_lr);
  form->addRow(tr("seed"), m_seed);
  auto* comm_box = group(tr("Communication"), &form, this);
  form->addRow(tr("bucket cap"), m_bucketMb);
  form->addRow(tr("first bucket"), m_firstBucketMb);
  form->addRow(tr("timeout"), m_timeoutMs);
  auto* fault_box = group(tr("Fault injection"), &form, this);
  form->addRow(m_inject);
  form->addRow(tr("rank"), m_injectRank);
  form->addRow(tr("skips block"), m_injectBlock);

  m_errorLabel = new QLabel(this);
  m_errorLabel->setObjectName(QStringLiteral("configError"));
  m_errorLabel->setWordWrap(true);
  m_errorLabel->setStyleSheet(QStringLiteral(
      "QLabel { color: #B00020; background: #FDECEE; border: 1px solid #F2B8BF; border-radius: 3px; padding: 4px; }"));
  m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_derived = new QLabel(this);
  m_derived->setWordWrap(true);
  m_derived->setStyleSheet(QStringLiteral("QLabel { color: #444; padding: 2px 4px; }"));

  m_run = new QPushButton(tr("Run"), this);
  m_run->setObjectName(QStringLiteral("runButton"));
  m_run->setToolTip(tr("Train with this configuration (Ctrl+R)"));
  m_run->setDefault(true);
  m_stop = new QPushButton(tr("Stop"), this);
  m_stop->setToolTip(tr("Cancel the running training (Ctrl+.)"));
  m_stop->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_run, 2);
  buttons->addWidget(m_stop, 1);

  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(6, 6, 6, 6);
  box->setSpacing(6);
  for (QWidget* w : {static_cast<QWidget*>(strategy_box), static_cast<QWidget*>(model_box),
                     static_cast<QWidget*>(train_box), static_cast<QWidget*>(comm_box),
                     static_cast<QWidget*>(fault_box)})
    box->addWidget(w);
  box->addWidget(m_errorLabel);
  box->addWidget(m_derived);
  box->addLayout(buttons);
  box->addStretch(1);

  setConfig(defaultConfig());

  const auto changed = [this] { revalidate(); };
  connect(m_strategy, &QComboBox::currentIndexChanged, this, changed);
  for (QSpinBox* s : {m_ranks, m_layers, m_hidden, m_batch, m_steps, m_seed, m_timeoutMs, m_injectRank, m_injectBlock})
    connect(s, &QSpinBox::valueChanged, this, changed);
  for (QDoubleSpinBox* s : {m_bucketMb, m_firstBucketMb, m_lr}) connect(s, &QDoubleSpinBox::valueChanged, this, changed);
  connect(m_inject, &QCheckBox::toggled, this, changed);
  connect(m_run, &QPushButton::clicked, this, &ExperimentPanel::runRequested);
  connect(m_stop, &QPushButton::clicked, this, &ExperimentPanel::stopRequested);
}

RunConfig ExperimentPanel::defaultConfig() {
  RunConfig c;
  c.ranks = 4;
  c.model.layers = 6;
  c.model.hidden = 256;
  c.batch = 32;
  c.steps = 4;
  c.bucket_mb = 1.0;
  c.first_bucket_mb = 0.25;
  return c;
}

RunConfig ExperimentPanel::config() const {
  RunConfig c;
  c.strategy = m_strategy->currentText().toStdString();
  c.ranks = m_ranks->value();
  c.model.layers = m_layers->value();
  c.model.hidden = m_hidden->value();
  c.batch = m_batch->value();
  c.steps = m_steps->value();
  c.bucket_mb = m_bucketMb->value();
  c.first_bucket_mb = m_firstBucketMb->value();
  c.lr = m_lr->value();
  c.seed = static_cast<uint64_t>(m_seed->value());
  c.timeout_ms = m_timeoutMs->value();
  if (m_inject->isChecked()) c.inject_branch = InjectBranch{m_injectRank->value(), m_injectBlock->value()};
  return c;
}

void ExperimentPanel::setConfig(const RunConfig& c) {
  m_loading = true;
  const int strategy = m_strategy->findText(QString::fromStdString(c.strategy));
  m_strategy->setCurrentIndex(strategy >= 0 ? strategy : 0);
  m_ranks->setValue(c.ranks);
  m_layers->setValue(c.model.layers);
  m_hidden->setValue(c.model.hidden);
  m_batch->setValue(c.batch);
  m_steps->setValue(c.steps);
  m_bucketMb->setValue(c.bucket_mb);
  m_firstBucketMb->setValue(c.first_bucket_mb);
  m_lr->setValue(c.lr);
  m_seed->setValue(static_cast<int>(std::min<uint64_t>(c.seed, static_cast<uint64_t>(std::numeric_limits<int>::max()))));
  m_timeoutMs->setValue(c.timeout_ms);
  m_inject->setChecked(c.inject_branch.has_value());
  m_injectRank->setValue(c.inject_branch ? c.inject_branch->rank : 0);
  m_injectBlock->setValue(c.inject_branch ? c.inject_branch->block : 0);
  m_loading = false;
  revalidate();
}

void ExperimentPanel::setRunning(bool running) {
  m_running = running;
  m_run->setEnabled(isValid() && !running);
  m_stop->setEnabled(running);
}

void ExperimentPanel::revalidate() {
  if (m_loading) return;
  m_injectRank->setEnabled(m_inject->isChecked());
  m_injectBlock->setEnabled(m_inject->isChecked());
  const bool was_valid = isValid();
  const RunConfig c = config();
  try {
    validate(c);
    m_error.clear();
  } catch (const ConfigError& e) {
    m_error = QString::fromStdString(e.what());
  }
  m_errorLabel->setText(m_error);
  m_errorLabel->setVisible(!m_error.isEmpty());
  if (m_error.isEmpty()) {
    // What this configuration means, from the core's own tables and formulas.
    const ModelSpec spec(c.model);
    const double n = static_cast<double>(spec.numParams());
    QString text = tr("%1 M parameters · %2 samples per rank").arg(n * 1e-6, 0, 'f', 2).arg(c.batch / c.ranks);
    try {
      const double per_param = expectedModelStateBytesPerParam(c.strategy, c.ranks);
      text += tr("<br>seed: %1 B/param → %2 MiB model state per rank")
                  .arg(per_param, 0, 'g', 4)
                  .arg(per_param * n / (1024.0 * 1024.0), 0, 'f', 1);
    } catch (const std::exception&) {
      // No formula for this strategy: show the model size alone.
    }
    m_derived->setText(text);
  }
  m_derived->setVisible(m_error.isEmpty());
  m_run->setEnabled(isValid() && !m_running);
  if (was_valid != isValid()) emit validityChanged(isValid());
}

void ExperimentPanel::saveSettings(QSettings& s) const {
  const RunConfig c = config();
  s.beginGroup(QStringLiteral("experiment"));
  s.setValue("strategy", QString::fromStdString(c.strategy));
  s.setValue("ranks", c.ranks);
  s.setValue("layers", c.model.layers);
  s.setValue("hidden", c.model.hidden);
  s.setValue("batch", c.batch);
  s.setValue("steps", c.steps);
  s.setValue("bucket_mb", c.bucket_mb);
  s.setValue("first_bucket_mb", c.first_bucket_mb);
  s.setValue("lr", c.lr);
  s.setValue("seed", static_cast<qulonglong>(c.seed));
  s.setValue("timeout_ms", c.timeout_ms);
  s.setValue("inject", c.inject_branch.has_value());
  s.setValue("inject_rank", m_injectRank->value());
  s.setValue("inject_block", m_injectBlock->value());
  s.endGroup();
}

void ExperimentPanel::restoreSettings(const QSettings& s) {
  const RunConfig d = defaultConfig();
  const QString g = QStringLiteral("experiment/");
  if (!s.contains(g + "strategy")) return;
  RunConfig c;
  c.strategy = s.value(g + "strategy", QString::fromStdString(d.strategy)).toString().toStdString();
  c.ranks = s.value(g + "ranks", d.ranks).toInt();
  c.model.layers = s.value(g + "layers", d.model.layers).toInt();
  c.model.hidden = s.value(g + "hidden", d.model.hidden).toInt();
  c.batch = s.value(g + "batch", d.batch).toInt();
  c.steps = s.value(g + "steps", d.steps).toInt();
  c.bucket_mb = s.value(g + "bucket_mb", d.bucket_mb).toDouble();
  c.first_bucket_mb = s.value(g + "first_bucket_mb", d.first_bucket_mb).toDouble();
  c.lr = s.value(g + "lr", d.lr).toDouble();
  c.seed = s.value(g + "seed", static_cast<qulonglong>(d.seed)).toULongLong();
  c.timeout_ms = s.value(g + "timeout_ms", d.timeout_ms).toInt();
  if (s.value(g + "inject", false).toBool())
    c.inject_branch = InjectBranch{s.value(g + "inject_rank", 0).toInt(), s.value(g + "inject_block", 0).toInt()};
  setConfig(c);
  // Keep the rank/block the user typed even when the branch is off.
  m_injectRank->setValue(s.value(g + "inject_rank", 0).toInt());
  m_injectBlock->setValue(s.value(g + "inject_block", 0).toInt());
}

}  // namespace shardscope
