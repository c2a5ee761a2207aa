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
#include <map>

#include "theme.h"
#include "palette.h"
#include "analysis/formulas.h"
#include "backend/device_runtime.h"
#include "analysis/run_summary.h"
#include "common/units.h"
#include "prediction_text.h"
#include "common/errors.h"
#include "model/hardware_profile.h"
#include "config/model_presets.h"
#include "model/model_spec.h"
#include "config/settings.h"

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
  // One row per setting of the table that has a place in the form: its type
  // picks the widget, its flag names it (tests and style sheets find fields by
  // it) and gives the tooltip.
  std::map<std::string, QFormLayout*> forms;
  std::vector<QGroupBox*> boxes;
  for (const char* title : {"Strategy", "Model", "Training", "Communication", "FSDP units", "Clock and backend",
                            "Fault injection"}) {
    QFormLayout* form = nullptr;
    boxes.push_back(group(tr(title), &form, this));
    forms[title] = form;
  }
  for (const Setting& s : settings()) {
    if (!s.form.group) continue;
    const QString key = QString::fromStdString(s.presetKey());
    const QString tip = QStringLiteral("%1: %2").arg(QString::fromLatin1(s.flag), QString::fromLatin1(s.help));
    QFormLayout* form = forms.at(s.form.group);
    QWidget* widget = nullptr;
    switch (s.type) {
      case SettingType::Int:
      case SettingType::RngState: {
        auto* box = intBox(0, static_cast<int>(s.form.max), tip, this);
        if (*s.form.suffix) box->setSuffix(tr(s.form.suffix));
        widget = box;
        break;
      }
      case SettingType::Real: {
        auto* box = doubleBox(0, s.form.max, s.form.decimals, s.form.step, tip, this);
        if (*s.form.suffix) box->setSuffix(tr(s.form.suffix));
        widget = box;
        break;
      }
      case SettingType::Choice:
      case SettingType::Text: {
        QStringList items;
        if (s.choices)
          for (const std::string& name : s.choices()) items << QString::fromStdString(name);
        widget = comboBox(items, tip, this);
        break;
      }
      case SettingType::Switch:
      case SettingType::RankBlock: {
        auto* check = new QCheckBox(tr(s.form.label), this);
        check->setToolTip(tip);
        widget = check;
        break;
      }
    }
    widget->setObjectName(key);
    if (qobject_cast<QCheckBox*>(widget)) form->addRow(widget);
    else form->addRow(tr(s.form.label), widget);
    m_fields.push_back({&s, widget});
  }
  m_strategyForm = forms.at("Strategy");
  m_modelForm = forms.at("Model");
  m_commForm = forms.at("Communication");
  m_clockForm = forms.at("Clock and backend");
  m_faultForm = forms.at("Fault injection");
  m_unitsBox = boxes[4];
  m_strategy = field<QComboBox>("strategy");
  m_ranks = field<QSpinBox>("ranks");
  m_shardGroup = field<QSpinBox>("shard-group");
  m_tp = field<QSpinBox>("tp");
  m_tp->setMinimum(1);
  m_model = field<QComboBox>("model");
  m_layers = field<QSpinBox>("layers");
  m_hidden = field<QSpinBox>("hidden");
  m_heads = field<QSpinBox>("heads");
  m_seq = field<QSpinBox>("seq");
  m_vocab = field<QSpinBox>("vocab");
  m_batch = field<QSpinBox>("batch");
  m_steps = field<QSpinBox>("steps");
  m_lr = field<QDoubleSpinBox>("lr");
  m_seed = field<QSpinBox>("seed");
  m_bucketMb = field<QDoubleSpinBox>("bucket-mb");
  m_firstBucketMb = field<QDoubleSpinBox>("first-bucket-mb");
  m_timeoutMs = field<QSpinBox>("timeout-ms");
  m_unitBlocks = field<QSpinBox>("unit-blocks");
  m_prefetch = field<QComboBox>("prefetch");
  m_reshard = field<QCheckBox>("reshard-after-forward");
  m_clock = field<QComboBox>("clock");
  m_profile = field<QComboBox>("profile");
  m_backend = field<QComboBox>("backend");
  m_replicate = field<QCheckBox>("replicate");
  m_inject = field<QCheckBox>("inject-branch");
  for (const char* name : {"zero3", "fsdp"})
    if (const int i = m_strategy->findText(QLatin1String(name)); i >= 0)
      m_strategy->setItemData(i, tr("zero3 and fsdp are the same algorithm: ZeRO stage 3 is what PyTorch calls FSDP "
                                    "(full sharding of parameters, gradients and optimizer state)"),
                              Qt::ToolTipRole);

  // The profile list is this installation's, not the table's.
  QStringList profiles;
  try {
    for (const std::string& name : listProfiles()) profiles << QString::fromStdString(name);
  } catch (const std::exception&) {
    // No profiles directory: the modeled clock keeps its default profile.
  }
  if (!profiles.contains(QStringLiteral("h100-sxm"))) profiles.prepend(QStringLiteral("h100-sxm"));
  m_profile->addItems(profiles);
  if (!deviceRuntimeRegistered()) {
    // Shown, so the option is known, but not selectable in a build without CUDA.
    if (auto* items = qobject_cast<QStandardItemModel*>(m_backend->model())) {
      for (Backend b : allBackends()) {
        if (!isGpuBackend(b)) continue;
        QStandardItem* item = items->item(m_backend->findText(QString::fromStdString(backendName(b))));
        item->setEnabled(false);
        item->setToolTip(tr("this build has no CUDA backend (nvcc, cuBLAS or NCCL were not found when it was built)"));
      }
    }
  }
  // --inject-branch R:L: its check box is the table's row, R and L sit under it.
  m_injectRank = intBox(0, 1024, tr("rank that takes the branch"), this);
  m_injectBlock = intBox(0, 4096, tr("block it skips"), this);
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
  for (QGroupBox* g : boxes) box->addWidget(g);
  box->addWidget(m_errorLabel);
  box->addWidget(m_derived);
  box->addLayout(buttons);
  box->addStretch(1);

  setConfig(defaultConfig());
  updatePresetText();

  const auto changed = [this] {
    revalidate();
    if (!m_loading) emit edited();
  };
  for (const auto& [setting, widget] : m_fields) {
    if (auto* c = qobject_cast<QComboBox*>(widget)) connect(c, &QComboBox::currentIndexChanged, this, changed);
    if (auto* b = qobject_cast<QSpinBox*>(widget)) connect(b, &QSpinBox::valueChanged, this, changed);
    if (auto* d = qobject_cast<QDoubleSpinBox*>(widget)) connect(d, &QDoubleSpinBox::valueChanged, this, changed);
    if (auto* k = qobject_cast<QCheckBox*>(widget)) connect(k, &QCheckBox::toggled, this, changed);
  }
  for (QSpinBox* b : {m_injectRank, m_injectBlock}) connect(b, &QSpinBox::valueChanged, this, changed);
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

QString ExperimentPanel::guiWords(const QString& message) {
  static const QRegularExpression flag(QStringLiteral("--([a-z][a-z0-9-]*)"));
  QString out;
  qsizetype at = 0;
  for (auto it = flag.globalMatch(message); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    out += message.mid(at, m.capturedStart() - at);
    const Setting* s = findSetting(m.captured(0).toStdString());
    out += s && s->form.group && s->form.label && *s->form.label ? QString::fromUtf8(s->form.label) : m.captured(0);
    at = m.capturedEnd();
  }
  out += message.mid(at);
  if (!out.isEmpty() && out != message) out[0] = out[0].toUpper();
  return out;
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
  c.strategy = allStrategies()[static_cast<size_t>(std::clamp(m_strategy->currentIndex(), 0, 5))];
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
  if (isHybrid(c.strategy)) c.shard_group = m_shardGroup->value();
  c.backend = parseBackend(m_backend->currentText().toStdString()).value_or(Backend::Cpu);
  // As the CLI: the meta backend has no other clock than the modeled one.
  // GPU backends measure the device (CUDA events).
  c.clock = (m_clock->currentIndex() == 1 && !isGpuBackend(c.backend)) || c.backend == Backend::Meta
                ? ClockKind::Modeled
                : ClockKind::Measured;
  if (c.clock == ClockKind::Modeled) c.profile = m_profile->currentText().toStdString();
  if (m_inject->isChecked()) c.inject_branch = InjectBranch{m_injectRank->value(), m_injectBlock->value()};
  c.replicate = c.backend != Backend::Meta || m_replicate->isChecked();
  // Where the row applies (the table's applicability): the GPU backends have no TP path.
  const Setting* tp_row = findSetting("--tp");
  c.tp = tp_row && tp_row->applies.appliesTo(c) ? m_tp->value() : 1;
  return c;
}

void ExperimentPanel::setConfig(const RunConfig& c) {
  m_loading = true;
  const int strategy = m_strategy->findText(QString::fromStdString(strategyName(c.strategy)));
  m_strategy->setCurrentIndex(strategy >= 0 ? strategy : 0);
  m_ranks->setValue(c.ranks);
  m_shardGroup->setValue(c.shardGroupSize());
  m_tp->setValue(c.tp);
  const int preset_model = c.model.preset.empty() ? -1 : m_model->findText(QString::fromStdString(c.model.preset));
  m_model->setCurrentIndex(preset_model >= 0 ? preset_model : c.model.kind == ModelKind::Gpt ? 1 : 0);
  m_backend->setCurrentIndex(std::max(0, m_backend->findText(QString::fromStdString(backendName(c.backend)))));
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
  // The clock follows the backend first: meta has only the modeled clock, GPUs only the measured one.
  const Backend backend = parseBackend(m_backend->currentText().toStdString()).value_or(Backend::Cpu);
  const bool meta = backend == Backend::Meta;
  const bool gpu = isGpuBackend(backend);
  m_clock->setEnabled(!meta && !gpu);
  const int forced = m_clock->findText(QString::fromStdString(clockName(meta ? ClockKind::Modeled : ClockKind::Measured)));
  if ((meta || gpu) && m_clock->currentIndex() != forced) {
    const QSignalBlocker block(m_clock);
    m_clock->setCurrentIndex(forced);
  }
  // Each row where its setting applies to the run the form describes (the table's applicability).
  const RunConfig draft = config();
  bool any_unit_row = false;
  for (const auto& [setting, widget] : m_fields) {
    const bool applies = setting->applies.appliesTo(draft);
    if (auto* form = qobject_cast<QFormLayout*>(widget->parentWidget() ? widget->parentWidget()->layout() : nullptr))
      form->setRowVisible(widget, applies);
    if (setting->form.group == std::string("FSDP units")) any_unit_row = any_unit_row || applies;
  }
  m_unitsBox->setVisible(any_unit_row);
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
    const double n = static_cast<double>(modelParams(c));
    QString text = tr("%1 M parameters · %2 samples per data-parallel rank").arg(n * 1e-6, 0, 'f', 2).arg(c.batch / c.dataParallelSize());
    text += tr("<br>predicted (ZeRO paper): %1 = %2 B/param → %3 MiB model state per rank")
                .arg(QString::fromStdString(modelStateFormulaText(c)))
                .arg(expectedBytesPerParam(c), 0, 'g', 4)
                .arg(toMiB(expectedModelStateBytes(c)), 0, 'f', 1);
    const ExpectedTraffic traffic = expectedTraffic(c);
    if (traffic.ring_ranks > 1) text += tr("<br>traffic per rank per step: %1").arg(trafficFormulaText(traffic));
    if (traffic.tp_per_layer > 0)
      text += tr("<br>tensor-parallel all-reduces (Megatron-LM): %1 = %2 MiB per layer, forward and again backward")
                  .arg(QString::fromStdString(traffic.tp_notation))
                  .arg(toMiB(traffic.tp_per_layer), 0, 'f', 2);
    if (c.strategy == Strategy::Zero3 || c.strategy == Strategy::Fsdp)
      text += tr("<br>zero3 and fsdp are the same algorithm (ZeRO stage 3 is what PyTorch calls FSDP): "
                 "both names run the same steps.");
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
  for (const auto& [setting, widget] : m_fields) {
    const QString key = QString::fromStdString(setting->settingsKey());
    if (auto* c = qobject_cast<QComboBox*>(widget)) s.setValue(key, c->currentText());
    if (auto* b = qobject_cast<QSpinBox*>(widget)) s.setValue(key, b->value());
    if (auto* d = qobject_cast<QDoubleSpinBox*>(widget)) s.setValue(key, d->value());
    if (auto* k = qobject_cast<QCheckBox*>(widget)) s.setValue(key, k->isChecked());
  }
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
  for (const auto& [setting, widget] : m_fields) {
    const QString key = g + QString::fromStdString(setting->settingsKey());
    if (!s.contains(key)) continue;
    if (auto* c = qobject_cast<QComboBox*>(widget)) {
      const int i = c->findText(s.value(key).toString());
      if (i >= 0) c->setCurrentIndex(i);
    }
    if (auto* b = qobject_cast<QSpinBox*>(widget)) b->setValue(s.value(key).toInt());
    if (auto* d = qobject_cast<QDoubleSpinBox*>(widget)) d->setValue(s.value(key).toDouble());
    if (auto* k = qobject_cast<QCheckBox*>(widget)) k->setChecked(s.value(key).toBool());
  }
  m_injectRank->setValue(s.value(g + "inject_rank", m_injectRank->value()).toInt());
  m_injectBlock->setValue(s.value(g + "inject_block", m_injectBlock->value()).toInt());
  m_loading = false;
  revalidate();
}

}  // namespace shardscope
