#include "experiment_panel.h"

#include <algorithm>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QRegularExpression>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QStandardItemModel>
#include <QVBoxLayout>
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
#include "setting_field.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

// The installation's lists a Text row may suggest (FormRow::suggestions).
QStringList fieldSuggestions(const char* name) {
  QStringList items;
  if (name != std::string_view("profiles")) return items;
  try {
    for (const std::string& profile : listProfiles()) items << QString::fromStdString(profile);
  } catch (const std::exception&) {
    // No profiles directory: the modeled clock keeps its default profile.
  }
  if (!items.contains(QStringLiteral("h100-sxm"))) items.prepend(QStringLiteral("h100-sxm"));
  return items;
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
  // One field per row of the table that has a place in the form, bound to
  // it (setting_field.h), in the CLI's order within its group; its flag names
  // the widget (tests and style sheets find fields by it).
  std::map<std::string, QFormLayout*> forms;
  std::vector<QGroupBox*> boxes;
  for (const char* title : {"Strategy", "Model", "Training", "Communication", "FSDP units", "Clock and backend",
                            "Fault injection"}) {
    QFormLayout* form = nullptr;
    boxes.push_back(group(tr(title), &form, this));
    forms[title] = form;
    m_groups.push_back({boxes.back(), {}});
  }
  for (const Setting* row : flagOrder()) {
    if (!row->inForm()) continue;
    std::unique_ptr<SettingField> field = SettingField::create(*row, this);
    if (row->form.suggestions) field->setItems(fieldSuggestions(row->form.suggestions));
    const auto form = forms.find(row->form.group);
    if (form == forms.end()) {  // a group the form has no box for yet: one more at the end
      QFormLayout* layout = nullptr;
      boxes.push_back(group(tr(row->form.group), &layout, this));
      m_groups.push_back({boxes.back(), {}});
      forms[row->form.group] = layout;
    }
    field->addTo(forms.at(row->form.group));
    for (auto& [box, fields] : m_groups)
      if (box->layout() == forms.at(row->form.group)) fields.push_back(field.get());
    m_fields.push_back(std::move(field));
  }
  if (SettingField* strategy = this->field("strategy"))
    if (auto* combo = qobject_cast<QComboBox*>(strategy->widget()))
      for (const char* name : {"zero3", "fsdp"})
        if (const int i = combo->findText(QLatin1String(name)); i >= 0)
          combo->setItemData(i, tr("zero3 and fsdp are the same algorithm: ZeRO stage 3 is what PyTorch calls FSDP "
                                   "(full sharding of parameters, gradients and optimizer state)"),
                             Qt::ToolTipRole);
  if (SettingField* backend = this->field("backend"); backend && !deviceRuntimeRegistered()) {
    // Shown, so the option is known, but not selectable in a build without CUDA.
    auto* combo = qobject_cast<QComboBox*>(backend->widget());
    if (auto* items = combo ? qobject_cast<QStandardItemModel*>(combo->model()) : nullptr) {
      for (Backend b : allBackends()) {
        if (!isGpuBackend(b)) continue;
        QStandardItem* item = items->item(combo->findText(QString::fromStdString(backendName(b))));
        item->setEnabled(false);
        item->setToolTip(tr("this build has no CUDA backend (nvcc, cuBLAS or NCCL were not found when it was built)"));
      }
    }
  }

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
  m_buttons = new QWidget(this);
  m_buttons->setObjectName(QStringLiteral("runButtons"));
  auto* buttons = new QHBoxLayout(m_buttons);
  buttons->setContentsMargins(6, 4, 6, 6);
  buttons->addWidget(m_run, 2);
  buttons->addWidget(m_stop, 1);

  m_importedBox = new QGroupBox(tr("On screen"), this);
  m_importedBox->setObjectName(QStringLiteral("importedTrace"));
  auto* imported_layout = new QVBoxLayout(m_importedBox);
  imported_layout->setContentsMargins(8, 6, 8, 6);
  m_importedNote = new QLabel(m_importedBox);
  m_importedNote->setObjectName(QStringLiteral("importedNote"));
  m_importedNote->setWordWrap(true);
  m_importedNote->setTextFormat(Qt::RichText);
  m_importedNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* edit = new QPushButton(tr("Edit an experiment"), m_importedBox);
  edit->setObjectName(QStringLiteral("leaveImported"));
  edit->setToolTip(tr("Show the experiment form again (the trace stays on screen until a run starts)"));
  connect(edit, &QPushButton::clicked, this, &ExperimentPanel::clearImported);
  imported_layout->addWidget(m_importedNote);
  imported_layout->addWidget(edit, 0, Qt::AlignLeft);
  m_importedBox->hide();

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
  box->addWidget(m_importedBox);
  box->addWidget(preset_box);
  for (QGroupBox* g : boxes) box->addWidget(g);
  box->addWidget(m_errorLabel);
  box->addWidget(m_derived);
  box->addWidget(m_buttons);
  box->addStretch(1);

  setConfig(defaultConfig());
  updatePresetText();

  const auto changed = [this] {
    revalidate();
    if (!m_loading) emit edited();
  };
  for (const std::unique_ptr<SettingField>& field : m_fields) field->onEdited(changed);
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
  // The wheel scrolls the form; it changes a value only in the field the user
  // clicked or tabbed into (Qt's default edits whatever is under the pointer).
  for (QWidget* w : findChildren<QWidget*>())
    if (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)) {
      w->setFocusPolicy(Qt::StrongFocus);
      w->installEventFilter(this);
    }
}

bool ExperimentPanel::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Wheel) {
    auto* w = qobject_cast<QWidget*>(watched);
    if (w && !w->hasFocus()) {
      event->ignore();  // goes on to the scroll area around the form
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
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

SettingField* ExperimentPanel::field(std::string_view key) const {
  for (const std::unique_ptr<SettingField>& f : m_fields)
    if (f->row().presetKey() == key) return f.get();
  return nullptr;
}

RunConfig ExperimentPanel::readForm(std::string* error) const {
  // Which rows apply depends on the strategy, backend, model and clock the
  // form shows: a first pass reads every field, the second only those that
  // apply to that run (a hidden field is not part of the config).
  RunConfig draft;
  for (const std::unique_ptr<SettingField>& f : m_fields) {
    try {
      if (const QString text = f->text(); !text.isEmpty()) f->row().set(draft, text.toStdString());
    } catch (const ConfigError&) {
    }
  }
  RunConfig c;
  for (const std::unique_ptr<SettingField>& f : m_fields) {
    const QString text = f->text();
    if (text.isEmpty() || !f->row().applies.appliesTo(draft)) continue;
    try {
      f->row().set(c, text.toStdString());
    } catch (const ConfigError& e) {
      if (error && error->empty()) *error = e.what();
    }
  }
  return c;
}

RunConfig ExperimentPanel::config() const { return readForm(nullptr); }

void ExperimentPanel::showImported(const QString& html) {
  m_imported = true;
  m_importedNote->setText(html);
  m_importedBox->show();
  revalidate();
  emit validityChanged(isValid());  // Run follows canRun()
}

void ExperimentPanel::clearImported() {
  if (!m_imported) return;
  m_imported = false;
  m_importedBox->hide();
  revalidate();
  emit validityChanged(isValid());
}

QString ExperimentPanel::importedText() const { return m_imported ? m_importedNote->text() : QString(); }

void ExperimentPanel::setConfig(const RunConfig& c) {
  m_imported = false;  // a run with a config is on its way or on screen
  m_importedBox->hide();
  m_loading = true;
  for (const std::unique_ptr<SettingField>& f : m_fields) {
    const std::optional<std::string> text = f->row().get(c);
    f->setText(text ? QString::fromStdString(*text) : QString());
  }
  m_loading = false;
  revalidate();
}

void ExperimentPanel::setRunning(bool running) {
  m_running = running;
  m_run->setEnabled(canRun() && !running);
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
  m_shownRun = 0;
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

void ExperimentPanel::showPresetRun(size_t index) {
  if (!m_active || index >= m_active->runs.size()) return;
  // Set aside while the fields change, so revalidate() does not read the new
  // run as an edit that leaves the preset.
  std::optional<Preset> keep = std::move(m_active);
  m_active.reset();
  setConfig(keep->runs[index].config);
  m_active = std::move(keep);
  m_activeKey = configKey(config());
  m_shownRun = index;
  updatePresetText();
}

void ExperimentPanel::showRunConfig(const RunConfig& c) {
  if (m_active) {
    const std::string key = configKey(c);
    for (size_t i = 0; i < m_active->runs.size(); ++i)
      if (configKey(m_active->runs[i].config) == key) {
        showPresetRun(i);
        return;
      }
  }
  setConfig(c);
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
    html += tr("<br><i>Runs one after another, then compared: %1. The form shows run %2.</i>")
                .arg(runs.join(QStringLiteral(" · ")))
                .arg(m_shownRun + 1);
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
  SettingField* backend_field = field("backend");
  SettingField* clock_field = field("clock");
  if (backend_field && clock_field) {
    const Backend backend = parseBackend(backend_field->text().toStdString()).value_or(Backend::Cpu);
    const bool meta = backend == Backend::Meta;
    const bool gpu = isGpuBackend(backend);
    clock_field->widget()->setEnabled(!meta && !gpu);
    const QString forced = QString::fromStdString(clockName(meta ? ClockKind::Modeled : ClockKind::Measured));
    if ((meta || gpu) && clock_field->text() != forced) {
      const QSignalBlocker block(clock_field->widget());
      clock_field->setText(forced);
    }
  }
  // Each row where its setting applies to the run the form describes (the
  // table's applicability); a group with no such row is hidden.
  const RunConfig draft = config();
  for (const auto& [box, fields] : m_groups) {
    bool any = false;
    for (SettingField* f : fields) {
      const bool applies = f->row().applies.appliesTo(draft);
      f->setShown(applies);
      any = any || applies;
    }
    box->setVisible(any && !m_imported);
  }
}

void ExperimentPanel::revalidate() {
  if (m_loading) return;
  updateVisibility();
  const bool was_valid = isValid();
  std::string read_error;
  const RunConfig c = readForm(&read_error);
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
    if (!read_error.empty()) throw ConfigError(read_error);
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
    text += tr("<br>predicted (%1): %2 = %3 B/param → %4 model state per rank")
                .arg(QString::fromStdString(formulaSource(c)))
                .arg(QString::fromStdString(modelStateFormulaText(c)))
                .arg(expectedBytesPerParam(c), 0, 'g', 4)
                .arg(quantity_text::sizeText(expectedModelStateBytes(c), 1, ByteUnit::MiB));
    const ExpectedTraffic traffic = expectedTraffic(c);
    if (traffic.ring_ranks > 1) text += tr("<br>traffic per rank per step: %1").arg(trafficFormulaText(traffic));
    if (traffic.tp_per_layer > 0)
      text += tr("<br>tensor-parallel all-reduces (Megatron-LM): %1 = %2 per layer, forward and again backward")
                  .arg(QString::fromStdString(traffic.tp_notation),
                       quantity_text::sizeText(double(traffic.tp_per_layer), 2, ByteUnit::MiB));
    if (c.strategy == Strategy::Zero3 || c.strategy == Strategy::Fsdp)
      text += tr("<br>zero3 and fsdp are the same algorithm (ZeRO stage 3 is what PyTorch calls FSDP): "
                 "both names run the same steps.");
    m_derived->setText(text);
  }
  m_derived->setVisible(m_error.isEmpty() && !m_imported);
  m_errorLabel->setVisible(!m_error.isEmpty() && !m_imported);
  m_run->setEnabled(canRun() && !m_running);
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

// Each field as its flag's text under the row's settings key. Widgets
// directly, not through RunConfig: hidden knobs keep what the user typed for
// when they apply again.
void ExperimentPanel::saveSettings(QSettings& s) const {
  s.beginGroup(QStringLiteral("experiment"));
  for (const std::unique_ptr<SettingField>& f : m_fields)
    s.setValue(QString::fromStdString(f->row().settingsKey()), f->text());
  s.endGroup();
}

void ExperimentPanel::restoreSettings(const QSettings& s) {
  const QString g = QStringLiteral("experiment/");
  if (!s.contains(g + "strategy")) return;
  // Text a field cannot show (a choice this build lacks) leaves it as it was.
  m_loading = true;
  for (const std::unique_ptr<SettingField>& f : m_fields) {
    const QString key = g + QString::fromStdString(f->row().settingsKey());
    if (s.contains(key)) f->setText(s.value(key).toString());
  }
  m_loading = false;
  revalidate();
}

}  // namespace shardscope
