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
#include "model/hardware_profile.h"
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

QComboBox* comboBox(const QStringList& items, const QString& tip, QWidget* parent) {
  auto* box = new QComboBox(parent);
  box->addItems(items);
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

const QStringList kPrefetch = {"none", "forward", "backward", "both"};

}  // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
  m_strategy = comboBox({"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"},
                        tr("--strategy: how model state is replicated or sharded across ranks"), this);
  m_ranks = intBox(0, 1024, tr("--ranks: data-parallel ranks (CPU threads), 1..64"), this);
  m_shardGroup = intBox(0, 1024, tr("--shard-group: hsdp ranks per shard group; must divide --ranks"), this);
  m_model = comboBox({"mlp", "gpt"}, tr("--model: residual MLP (regression) or GPT blocks (attention + MLP) on text"), this);
  m_layers = intBox(0, 4096, tr("--layers: blocks (the FSDP units' building blocks), 1..256"), this);
  m_hidden = intBox(0, 65536, tr("--hidden: width D; each block's inner width is 4D; 8..8192"), this);
  m_heads = intBox(0, 4096, tr("--heads: attention heads; must divide --hidden"), this);
  m_seq = intBox(0, 65536, tr("--seq: tokens per sample"), this);
  m_vocab = intBox(0, 1 << 22, tr("--vocab: vocabulary size; byte-level tokens need 256"), this);
  m_batch = intBox(0, 1 << 22, tr("--batch: global batch, a multiple of --ranks"), this);
  m_steps = intBox(0, 1'000'000, tr("--steps: training steps"), this);
  m_lr = doubleBox(0, 100, 6, 1e-4, tr("--lr: AdamW learning rate"), this);
  m_seed = intBox(0, std::numeric_limits<int>::max(), tr("--seed: data, init and teacher seed"), this);
  m_bucketMb = doubleBox(0, 100000, 2, 1, tr("--bucket-mb: gradient bucket cap in MiB (PyTorch bucket_cap_mb)"), this);
  m_firstBucketMb = doubleBox(0, 100000, 2, 0.5, tr("--first-bucket-mb: cap of the first bucket in MiB"), this);
  m_timeoutMs = intBox(0, 10'000'000, tr("--timeout-ms: collective fingerprint / readiness timeout"), this);
  m_unitBlocks = intBox(0, 4096, tr("--unit-blocks: consecutive blocks wrapped in one FSDP unit"), this);
  m_prefetch = comboBox(kPrefetch, tr("--prefetch: gather the next unit while this one computes"), this);
  m_reshard = new QCheckBox(tr("reshard after forward"), this);
  m_reshard->setToolTip(tr("--reshard-after-forward: free gathered params after forward "
                           "(off = SHARD_GRAD_OP: keep them until backward)"));
  m_clock = comboBox({"measured", "modeled"},
                     tr("--clock: this machine's time, or op costs priced under a hardware profile (deterministic)"), this);
  QStringList profiles;
  try {
    for (const std::string& name : listProfiles()) profiles << QString::fromStdString(name);
  } catch (const std::exception&) {
    // No profiles directory: the modeled clock keeps its default profile.
  }
  if (!profiles.contains(QStringLiteral("h100-sxm"))) profiles.prepend(QStringLiteral("h100-sxm"));
  m_profile = comboBox(profiles, tr("--profile: the hardware the modeled clock prices ops for"), this);
  m_timeoutMs->setSuffix(tr(" ms"));
  m_bucketMb->setSuffix(tr(" MiB"));
  m_firstBucketMb->setSuffix(tr(" MiB"));
  m_inject = new QCheckBox(tr("rank skips a block"), this);
  m_inject->setToolTip(tr("--inject-branch R:L: a rank-dependent branch. The collectives then mismatch; "
                          "ShardScope names the ranks, op and bucket instead of hanging."));
  m_injectRank = intBox(0, 1024, tr("rank that takes the branch"), this);
  m_injectBlock = intBox(0, 4096, tr("block it skips"), this);

  // Object names follow the CLI flags (tests and style sheets find fields by them).
  const std::pair<QWidget*, const char*> names[] = {
      {m_strategy, "strategy"}, {m_ranks, "ranks"}, {m_shardGroup, "shard-group"}, {m_model, "model"},
      {m_layers, "layers"}, {m_hidden, "hidden"}, {m_heads, "heads"}, {m_seq, "seq"}, {m_vocab, "vocab"},
      {m_batch, "batch"}, {m_steps, "steps"}, {m_lr, "lr"}, {m_seed, "seed"}, {m_bucketMb, "bucket-mb"},
      {m_firstBucketMb, "first-bucket-mb"}, {m_timeoutMs, "timeout-ms"}, {m_unitBlocks, "unit-blocks"},
      {m_prefetch, "prefetch"}, {m_reshard, "reshard-after-forward"}, {m_clock, "clock"}, {m_profile, "profile"},
      {m_inject, "inject-branch"}};
  for (const auto& [widget, name] : names) widget->setObjectName(QString::fromLatin1(name));

  QFormLayout* form = nullptr;
  auto* strategy_box = group(tr("Strategy"), &m_strategyForm, this);
  m_strategyForm->addRow(tr("strategy"), m_strategy);
  m_strategyForm->addRow(tr("ranks"), m_ranks);
  m_strategyForm->addRow(tr("shard group"), m_shardGroup);
  auto* model_box = group(tr("Model"), &m_modelForm, this);
  m_modelForm->addRow(tr("model"), m_model);
  m_modelForm->addRow(tr("layers"), m_layers);
  m_modelForm->addRow(tr("hidden"), m_hidden);
  m_modelForm->addRow(tr("heads"), m_heads);
  m_modelForm->addRow(tr("seq"), m_seq);
  m_modelForm->addRow(tr("vocab"), m_vocab);
  auto* train_box = group(tr("Training"), &form, this);
  form->addRow(tr("global batch"), m_batch);
  form->addRow(tr("steps"), m_steps);
  form->addRow(tr("learning rate"), m_lr);
  form->addRow(tr("seed"), m_seed);
  auto* comm_box = group(tr("Communication"), &form, this);
  form->addRow(tr("bucket cap"), m_bucketMb);
  form->addRow(tr("first bucket"), m_firstBucketMb);
  form->addRow(tr("timeout"), m_timeoutMs);
  m_unitsBox = group(tr("FSDP units"), &form, this);
  form->addRow(tr("blocks/unit"), m_unitBlocks);
  form->addRow(tr("prefetch"), m_prefetch);
  form->addRow(m_reshard);
  auto* clock_box = group(tr("Clock"), &m_clockForm, this);
  m_clockForm->addRow(tr("clock"), m_clock);
  m_clockForm->addRow(tr("profile"), m_profile);
  auto* fault_box = group(tr("Fault injection"), &m_faultForm, this);
  m_faultForm->addRow(m_inject);
  m_faultForm->addRow(tr("rank"), m_injectRank);
  m_faultForm->addRow(tr("skips block"), m_injectBlock);

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
                     static_cast<QWidget*>(m_unitsBox), static_cast<QWidget*>(clock_box),
                     static_cast<QWidget*>(fault_box)})
    box->addWidget(w);
  box->addWidget(m_errorLabel);
  box->addWidget(m_derived);
  box->addLayout(buttons);
  box->addStretch(1);

  setConfig(defaultConfig());

  const auto changed = [this] { revalidate(); };
  for (QComboBox* c : {m_strategy, m_model, m_prefetch, m_clock, m_profile})
    connect(c, &QComboBox::currentIndexChanged, this, changed);
  for (QSpinBox* s : {m_ranks, m_shardGroup, m_layers, m_hidden, m_heads, m_seq, m_vocab, m_batch, m_steps, m_seed,
                      m_timeoutMs, m_unitBlocks, m_injectRank, m_injectBlock})
    connect(s, &QSpinBox::valueChanged, this, changed);
  for (QDoubleSpinBox* s : {m_bucketMb, m_firstBucketMb, m_lr}) connect(s, &QDoubleSpinBox::valueChanged, this, changed);
  for (QCheckBox* c : {m_inject, m_reshard}) connect(c, &QCheckBox::toggled, this, changed);
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
  c.model.kind = m_model->currentIndex() == 1 ? ModelKind::Gpt : ModelKind::Mlp;
  c.model.layers = m_layers->value();
  c.model.hidden = m_hidden->value();
  if (c.model.kind == ModelKind::Gpt) {
    c.model.heads = m_heads->value();
    c.model.seq = m_seq->value();
    c.model.vocab = m_vocab->value();
  }
  c.batch = m_batch->value();
  c.steps = m_steps->value();
  c.bucket_mb = m_bucketMb->value();
  c.first_bucket_mb = m_firstBucketMb->value();
  c.lr = m_lr->value();
  c.seed = static_cast<uint64_t>(m_seed->value());
  c.timeout_ms = m_timeoutMs->value();
  // Sharding knobs only where they apply: validate() names a knob given to a
  // strategy that has no use for it.
  if (c.isSharded()) {
    c.unit_blocks = m_unitBlocks->value();
    c.prefetch = static_cast<Prefetch>(m_prefetch->currentIndex());
    c.reshard_after_forward = m_reshard->isChecked();
  }
  if (c.strategy == "hsdp") c.shard_group = m_shardGroup->value();
  c.clock = m_clock->currentIndex() == 1 ? ClockKind::Modeled : ClockKind::Measured;
  if (c.clock == ClockKind::Modeled) c.profile = m_profile->currentText().toStdString();
  if (m_inject->isChecked()) c.inject_branch = InjectBranch{m_injectRank->value(), m_injectBlock->value()};
  return c;
}

void ExperimentPanel::setConfig(const RunConfig& c) {
  m_loading = true;
  const int strategy = m_strategy->findText(QString::fromStdString(c.strategy));
  m_strategy->setCurrentIndex(strategy >= 0 ? strategy : 0);
  m_ranks->setValue(c.ranks);
  m_shardGroup->setValue(c.shardGroupSize());
  m_model->setCurrentIndex(c.model.kind == ModelKind::Gpt ? 1 : 0);
  m_layers->setValue(c.model.layers);
  m_hidden->setValue(c.model.hidden);
  m_heads->setValue(c.model.heads);
  m_seq->setValue(c.model.seq);
  m_vocab->setValue(c.model.vocab);
  m_batch->setValue(c.batch);
  m_steps->setValue(c.steps);
  m_bucketMb->setValue(c.bucket_mb);
  m_firstBucketMb->setValue(c.first_bucket_mb);
  m_lr->setValue(c.lr);
  m_seed->setValue(static_cast<int>(std::min<uint64_t>(c.seed, static_cast<uint64_t>(std::numeric_limits<int>::max()))));
  m_timeoutMs->setValue(c.timeout_ms);
  m_unitBlocks->setValue(c.unitBlocks());
  m_prefetch->setCurrentIndex(static_cast<int>(c.prefetchMode()));
  m_reshard->setChecked(c.reshardAfterForward());
  m_clock->setCurrentIndex(c.clock == ClockKind::Modeled ? 1 : 0);
  const int profile = m_profile->findText(QString::fromStdString(c.profileName()));
  if (profile >= 0) m_profile->setCurrentIndex(profile);
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

void ExperimentPanel::updateVisibility() {
  const QString strategy = m_strategy->currentText();
  const bool sharded = strategy == "zero3" || strategy == "fsdp" || strategy == "hsdp";
  m_strategyForm->setRowVisible(m_shardGroup, strategy == "hsdp");
  const bool gpt = m_model->currentIndex() == 1;
  for (QWidget* w : {static_cast<QWidget*>(m_heads), static_cast<QWidget*>(m_seq), static_cast<QWidget*>(m_vocab)})
    m_modelForm->setRowVisible(w, gpt);
  m_unitsBox->setVisible(sharded);
  m_clockForm->setRowVisible(m_profile, m_clock->currentIndex() == 1);
  m_faultForm->setRowVisible(m_injectRank, m_inject->isChecked());
  m_faultForm->setRowVisible(m_injectBlock, m_inject->isChecked());
}

void ExperimentPanel::revalidate() {
  if (m_loading) return;
  updateVisibility();
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
      const double per_param = expectedModelStateBytesPerParam(c.strategy, c.ranks, c.shardGroupSize());
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
  s.beginGroup(QStringLiteral("experiment"));
  s.setValue("strategy", m_strategy->currentText());
  s.setValue("ranks", m_ranks->value());
  s.setValue("shard_group", m_shardGroup->value());
  s.setValue("model", m_model->currentText());
  s.setValue("layers", m_layers->value());
  s.setValue("hidden", m_hidden->value());
  s.setValue("heads", m_heads->value());
  s.setValue("seq", m_seq->value());
  s.setValue("vocab", m_vocab->value());
  s.setValue("batch", m_batch->value());
  s.setValue("steps", m_steps->value());
  s.setValue("bucket_mb", m_bucketMb->value());
  s.setValue("first_bucket_mb", m_firstBucketMb->value());
  s.setValue("lr", m_lr->value());
  s.setValue("seed", m_seed->value());
  s.setValue("timeout_ms", m_timeoutMs->value());
  s.setValue("unit_blocks", m_unitBlocks->value());
  s.setValue("prefetch", m_prefetch->currentText());
  s.setValue("reshard_after_forward", m_reshard->isChecked());
  s.setValue("clock", m_clock->currentText());
  s.setValue("profile", m_profile->currentText());
  s.setValue("inject", m_inject->isChecked());
  s.setValue("inject_rank", m_injectRank->value());
  s.setValue("inject_block", m_injectBlock->value());
  s.endGroup();
}

void ExperimentPanel::restoreSettings(const QSettings& s) {
  const QString g = QStringLiteral("experiment/");
  if (!s.contains(g + "strategy")) return;
  // Widgets directly, not through RunConfig: hidden knobs keep what the user
  // typed for when they apply again. Unknown text leaves a combo as it was.
  m_loading = true;
  const auto combo = [&](QComboBox* box, const char* key) {
    const int i = box->findText(s.value(g + key).toString());
    if (i >= 0) box->setCurrentIndex(i);
  };
  const auto spin = [&](QSpinBox* box, const char* key) { box->setValue(s.value(g + key, box->value()).toInt()); };
  const auto real = [&](QDoubleSpinBox* box, const char* key) {
    box->setValue(s.value(g + key, box->value()).toDouble());
  };
  combo(m_strategy, "strategy");
  combo(m_model, "model");
  combo(m_prefetch, "prefetch");
  combo(m_clock, "clock");
  combo(m_profile, "profile");
  spin(m_ranks, "ranks");
  spin(m_shardGroup, "shard_group");
  spin(m_layers, "layers");
  spin(m_hidden, "hidden");
  spin(m_heads, "heads");
  spin(m_seq, "seq");
  spin(m_vocab, "vocab");
  spin(m_batch, "batch");
  spin(m_steps, "steps");
  spin(m_seed, "seed");
  spin(m_timeoutMs, "timeout_ms");
  spin(m_unitBlocks, "unit_blocks");
  spin(m_injectRank, "inject_rank");
  spin(m_injectBlock, "inject_block");
  real(m_bucketMb, "bucket_mb");
  real(m_firstBucketMb, "first_bucket_mb");
  real(m_lr, "lr");
  m_reshard->setChecked(s.value(g + "reshard_after_forward", m_reshard->isChecked()).toBool());
  m_inject->setChecked(s.value(g + "inject", false).toBool());
  m_loading = false;
  revalidate();
}

}  // namespace shardscope
