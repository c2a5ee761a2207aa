#include "experiment_panel.h"

#include <algorithm>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QRegularExpression>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <limits>

#include "theme.h"
#include "palette.h"
#include "analysis/formulas.h"
#include "backend/device_runtime.h"
#include "analysis/run_summary.h"
#include "common/errors.h"
#include "model/hardware_profile.h"
#include "model/model_presets.h"
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
  m_preset = new QComboBox(this);
  m_preset->setObjectName(QStringLiteral("preset"));
  m_preset->setToolTip(tr("Teaching experiments: each fills the form and says what to look for"));
  m_preset->addItem(tr("custom experiment"));
  // Long titles must not widen the dock: the combo elides, the text below wraps.
  m_preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_preset->setMinimumContentsLength(12);
  try {
    for (const Preset& p : builtinPresets()) m_preset->addItem(p.title, p.name);
  } catch (const PresetError& e) {
    m_presetError = QString::fromStdString(e.what());
  }
  m_presetText = new QLabel(this);
  m_presetText->setObjectName(QStringLiteral("presetText"));
  m_presetText->setWordWrap(true);
  m_presetText->setTextFormat(Qt::RichText);
  m_presetText->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_presetText->setStyleSheet(QStringLiteral(
      "QLabel { color: #1F2D3A; background: #EEF5FB; border: 1px solid #C9DDEE; border-radius: 3px; padding: 5px; }"));
  m_strategy = comboBox({"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"},
                        tr("--strategy: how model state is replicated or sharded across ranks"), this);
  m_ranks = intBox(0, 1024, tr("--ranks: data-parallel ranks (CPU threads), 1..64"), this);
  m_shardGroup = intBox(0, 1024, tr("--shard-group: hsdp ranks per shard group; must divide --ranks"), this);
  QStringList models = {"mlp", "gpt"};
  for (const ModelPreset& p : modelPresets()) models << QString::fromStdString(p.name);
  m_model = comboBox(models, tr("--model: residual MLP (regression), GPT blocks (attention + MLP) on text, "
                                "or a published shape for the meta backend"), this);
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
  // Index order is config()'s kBackends and setConfig()'s mapping.
  m_backend = comboBox({"cpu", "meta", "cuda-emulated", "cuda"},
                       tr("--backend: cpu runs real math on CPU threads; meta runs shapes only (no math, no loss) "
                          "on the modeled clock, for models too big for this machine; cuda-emulated runs every "
                          "rank on GPU 0 with real kernels; cuda runs one rank per GPU over NCCL"), this);
  if (!deviceRuntimeRegistered()) {
    // Shown, so the option is known, but not selectable in a build without CUDA.
    if (auto* items = qobject_cast<QStandardItemModel*>(m_backend->model())) {
      for (int row : {2, 3}) {
        QStandardItem* item = items->item(row);
        item->setEnabled(false);
        item->setToolTip(tr("this build has no CUDA backend (nvcc, cuBLAS or NCCL were not found when it was built)"));
      }
    }
  }
  m_replicate = new QCheckBox(tr("simulate symmetric ranks once"), this);
  m_replicate->setToolTip(tr("--replicate: meta runs of 64+ symmetric ranks run rank 0 and copy it to the others "
                             "(same events, ledger and traffic, far fewer threads)"));
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
      {m_backend, "backend"}, {m_inject, "inject-branch"}, {m_replicate, "replicate"}};
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
  auto* comm_box = group(tr("Communication"), &m_commForm, this);
  m_commForm->addRow(tr("bucket cap"), m_bucketMb);
  m_commForm->addRow(tr("first bucket"), m_firstBucketMb);
  m_commForm->addRow(tr("timeout"), m_timeoutMs);
  m_unitsBox = group(tr("FSDP units"), &form, this);
  form->addRow(tr("blocks/unit"), m_unitBlocks);
  form->addRow(tr("prefetch"), m_prefetch);
  form->addRow(m_reshard);
  auto* clock_box = group(tr("Clock and backend"), &m_clockForm, this);
  m_clockForm->addRow(tr("backend"), m_backend);
  m_clockForm->addRow(tr("clock"), m_clock);
  m_clockForm->addRow(tr("profile"), m_profile);
  m_clockForm->addRow(m_replicate);
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
  m_derived->setStyleSheet(QStringLiteral("QLabel { padding: 2px 4px; }"));
  setTone(m_derived, Tone::Note);

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

  auto* preset_box = new QGroupBox(tr("Preset"), this);
  auto* preset_layout = new QVBoxLayout(preset_box);
  preset_layout->setContentsMargins(8, 6, 8, 6);
  preset_layout->setSpacing(4);
  preset_layout->addWidget(m_preset);
  preset_layout->addWidget(m_presetText);

  auto* box = new QVBoxLayout(this);
  m_box = box;
  box->setContentsMargins(6, 6, 6, 6);
  box->setSpacing(6);
  box->addWidget(preset_box);
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
  updatePresetText();

  const auto changed = [this] { revalidate(); };
  for (QComboBox* c : {m_strategy, m_model, m_prefetch, m_clock, m_profile, m_backend})
    connect(c, &QComboBox::currentIndexChanged, this, changed);
  for (QSpinBox* s : {m_ranks, m_shardGroup, m_layers, m_hidden, m_heads, m_seq, m_vocab, m_batch, m_steps, m_seed,
                      m_timeoutMs, m_unitBlocks, m_injectRank, m_injectBlock})
    connect(s, &QSpinBox::valueChanged, this, changed);
  for (QDoubleSpinBox* s : {m_bucketMb, m_firstBucketMb, m_lr}) connect(s, &QDoubleSpinBox::valueChanged, this, changed);
  for (QCheckBox* c : {m_inject, m_reshard, m_replicate}) connect(c, &QCheckBox::toggled, this, changed);
  connect(m_preset, &QComboBox::activated, this, [this](int index) {
    if (index <= 0) {
      m_active.reset();
      updatePresetText();
      updateRunButton();
      emit presetChanged();
      return;
    }
    selectPreset(m_preset->itemData(index).toString());
  });
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
  if (m_model->currentIndex() >= 2) {
    // A published shape: its table fixes layers, width, heads and sequence.
    c.model = presetShape(m_model->currentText().toStdString());
  } else {
    c.model.kind = m_model->currentIndex() == 1 ? ModelKind::Gpt : ModelKind::Mlp;
    c.model.layers = m_layers->value();
    c.model.hidden = m_hidden->value();
    if (c.model.kind == ModelKind::Gpt) {
      c.model.heads = m_heads->value();
      c.model.seq = m_seq->value();
      c.model.vocab = m_vocab->value();
    }
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
  constexpr Backend kBackends[] = {Backend::Cpu, Backend::Meta, Backend::CudaEmulated, Backend::Cuda};
  c.backend = kBackends[std::clamp(m_backend->currentIndex(), 0, 3)];
  // As the CLI: the meta backend has no other clock than the modeled one.
  // GPU backends measure the device (CUDA events).
  c.clock = (m_clock->currentIndex() == 1 && !isGpuBackend(c.backend)) || c.backend == Backend::Meta
                ? ClockKind::Modeled
                : ClockKind::Measured;
  if (c.clock == ClockKind::Modeled) c.profile = m_profile->currentText().toStdString();
  if (m_inject->isChecked()) c.inject_branch = InjectBranch{m_injectRank->value(), m_injectBlock->value()};
  c.replicate = c.backend != Backend::Meta || m_replicate->isChecked();
  return c;
}

void ExperimentPanel::setConfig(const RunConfig& c) {
  m_loading = true;
  const int strategy = m_strategy->findText(QString::fromStdString(c.strategy));
  m_strategy->setCurrentIndex(strategy >= 0 ? strategy : 0);
  m_ranks->setValue(c.ranks);
  m_shardGroup->setValue(c.shardGroupSize());
  const int preset_model = c.model.preset.empty() ? -1 : m_model->findText(QString::fromStdString(c.model.preset));
  m_model->setCurrentIndex(preset_model >= 0 ? preset_model : c.model.kind == ModelKind::Gpt ? 1 : 0);
  m_backend->setCurrentIndex(c.backend == Backend::Meta           ? 1
                             : c.backend == Backend::CudaEmulated ? 2
                             : c.backend == Backend::Cuda         ? 3
                                                                  : 0);
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
  m_replicate->setChecked(c.replicate);
  m_injectRank->setValue(c.inject_branch ? c.inject_branch->rank : 0);
  m_injectBlock->setValue(c.inject_branch ? c.inject_branch->block : 0);
  m_loading = false;
  revalidate();
}

void ExperimentPanel::setRunning(bool running) {
  m_running = running;
  m_run->setEnabled(isValid() && !running);
  m_stop->setEnabled(running);
  m_preset->setEnabled(!running);
}

std::string ExperimentPanel::configKey(const RunConfig& c) const {
  // configJson() has neither the backend nor a published model's name.
  return configJson(c) + "|" + backendName(c.backend) + "|" + c.model.preset;
}

bool ExperimentPanel::selectPreset(const QString& name) {
  try {
    showPreset(findPreset(name));  // a built-in name, or a file picked earlier
    return true;
  } catch (const PresetError& e) {
    m_presetError = QString::fromStdString(e.what());
    updatePresetText();
    m_presetError.clear();
    return false;
  }
}

void ExperimentPanel::showPreset(const Preset& preset) {
  // The form may round a value (two decimals of MiB): the key is what it
  // shows, while a preset run uses the preset's own configs.
  m_active.reset();
  setConfig(preset.runs.front().config);
  m_active = preset;
  m_activeKey = configKey(config());
  int index = m_preset->findData(preset.name);
  const QSignalBlocker block(m_preset);
  if (index < 0 && !preset.source.isEmpty()) {
    // A preset from a file: listed under its title, found again by its path.
    index = m_preset->findData(preset.source);
    if (index < 0) {
      m_preset->addItem(preset.title, preset.source);
      index = m_preset->count() - 1;
    }
  }
  m_preset->setCurrentIndex(std::max(0, index));
  updatePresetText();
  updateRunButton();
  emit presetChanged();
}

void ExperimentPanel::updatePresetText() {
  if (!m_presetError.isEmpty()) {
    m_presetText->setText(QStringLiteral("<span style='color:#B00020'>%1</span>").arg(m_presetError.toHtmlEscaped()));
    m_presetText->setVisible(true);
    return;
  }
  if (!m_active) {
    m_presetText->setVisible(false);
    return;
  }
  QString html = QStringLiteral("<b>%1</b><br>%2").arg(m_active->title.toHtmlEscaped(), m_active->text.toHtmlEscaped());
  if (m_active->runs.size() > 1) {
    QStringList runs;
    for (size_t i = 0; i < m_active->runs.size(); ++i)
      runs << QStringLiteral("%1. %2").arg(i + 1).arg(m_active->runs[i].label.toHtmlEscaped());
    html += tr("<br><i>Runs one after another: %1. The form shows run 1.</i>").arg(runs.join(QStringLiteral(" · ")));
  }
  m_presetText->setText(html);
  m_presetText->setVisible(true);
}

void ExperimentPanel::updateRunButton() {
  const size_t runs = m_active ? m_active->runs.size() : 1;
  m_run->setText(runs > 1 ? tr("Run preset (%1 runs)").arg(runs) : tr("Run"));
}

void ExperimentPanel::updateVisibility() {
  const QString strategy = m_strategy->currentText();
  const bool sharded = strategy == "zero3" || strategy == "fsdp" || strategy == "hsdp";
  m_strategyForm->setRowVisible(m_shardGroup, strategy == "hsdp");
  const bool gpt = m_model->currentIndex() == 1;  // published shapes fix their own
  for (QWidget* w : {static_cast<QWidget*>(m_heads), static_cast<QWidget*>(m_seq), static_cast<QWidget*>(m_vocab)})
    m_modelForm->setRowVisible(w, gpt);
  m_unitsBox->setVisible(sharded);
  // Gradient buckets belong to ddp, zero1 and zero2; sharded strategies reduce per unit.
  m_commForm->setRowVisible(m_bucketMb, !sharded);
  m_commForm->setRowVisible(m_firstBucketMb, !sharded);
  const bool published = m_model->currentIndex() >= 2;
  for (QWidget* w : {static_cast<QWidget*>(m_layers), static_cast<QWidget*>(m_hidden)})
    m_modelForm->setRowVisible(w, !published);
  const bool meta = m_backend->currentIndex() == 1;
  const bool gpu = m_backend->currentIndex() >= 2;
  m_clock->setEnabled(!meta && !gpu);
  if ((meta && m_clock->currentIndex() != 1) || (gpu && m_clock->currentIndex() != 0)) {
    const QSignalBlocker block(m_clock);
    m_clock->setCurrentIndex(meta ? 1 : 0);
  }
  m_clockForm->setRowVisible(m_profile, m_clock->currentIndex() == 1 || meta);
  m_clockForm->setRowVisible(m_replicate, meta);
  m_faultForm->setRowVisible(m_injectRank, m_inject->isChecked());
  m_faultForm->setRowVisible(m_injectBlock, m_inject->isChecked());
}

void ExperimentPanel::revalidate() {
  if (m_loading) return;
  updateVisibility();
  const bool was_valid = isValid();
  const RunConfig c = config();
  if (m_active && configKey(c) != m_activeKey) {
    // Edited: the form is a custom experiment now (the preset's other runs no longer apply).
    m_active.reset();
    {
      const QSignalBlocker block(m_preset);
      m_preset->setCurrentIndex(0);
    }
    updatePresetText();
    updateRunButton();
    emit presetChanged();
  }
  try {
    validate(c);
    m_error.clear();
  } catch (const ConfigError& e) {
    m_error = QString::fromStdString(e.what());
  }
  m_errorLabel->setText(m_error);
  placeError();
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

void ExperimentPanel::placeError() {
  if (m_errorField) m_errorField->setStyleSheet(QString());
  m_errorField = nullptr;
  // Take the label out of wherever it was (a form row, or the bottom).
  if (auto* form = qobject_cast<QFormLayout*>(m_errorLabel->parentWidget() ? m_errorLabel->parentWidget()->layout() : nullptr);
      form && form->indexOf(m_errorLabel) >= 0)
    form->takeRow(m_errorLabel);
  else
    m_box->removeWidget(m_errorLabel);
  QWidget* field = nullptr;
  const QRegularExpressionMatch flag = QRegularExpression(QStringLiteral("--([a-z][a-z-]*)")).match(m_error);
  if (flag.hasMatch()) field = findChild<QWidget*>(flag.captured(1));
  auto* form = field && field->parentWidget() ? qobject_cast<QFormLayout*>(field->parentWidget()->layout()) : nullptr;
  int row = -1;
  QFormLayout::ItemRole role;
  if (form) form->getWidgetPosition(field, &row, &role);
  if (m_error.isEmpty() || !form || row < 0 || !field->isVisibleTo(this)) {
    m_errorLabel->setParent(this);
    m_box->insertWidget(m_box->indexOf(m_derived), m_errorLabel);
    return;
  }
  // Right under the field the message is about, which is outlined in red.
  m_errorLabel->setParent(field->parentWidget());
  form->insertRow(row + 1, m_errorLabel);
  m_errorField = field;
  field->setStyleSheet(QStringLiteral("border: 1px solid #B00020; border-radius: 2px;"));
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
  s.setValue("backend", m_backend->currentText());
  s.setValue("inject", m_inject->isChecked());
  s.setValue("replicate", m_replicate->isChecked());
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
  combo(m_backend, "backend");
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
  m_replicate->setChecked(s.value(g + "replicate", true).toBool());
  m_loading = false;
  revalidate();
}

}  // namespace shardscope
