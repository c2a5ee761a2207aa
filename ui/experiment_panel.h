// The experiment form: every RunConfig knob, checked by the core's validate()
// on every edit, so the window refuses exactly what the CLI refuses, with the
// same message. Spin boxes deliberately allow a little more than is valid (the
// validator, not a silent clamp, tells the rule); knobs that do not apply to
// the chosen strategy, model or clock are hidden and left unset in the config.
// A preset picker on top fills the form and shows what to look for; editing
// the form afterwards makes it a custom experiment again.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "config/run_config.h"
#include "preset.h"
#include "config/settings.h"
#include "setting_field.h"

class QComboBox;
class QGroupBox;
class QLabel;
class QPushButton;
class QSettings;
class QVBoxLayout;

namespace shardscope {

class ExperimentPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ExperimentPanel(QWidget* parent = nullptr);

  // First-launch experiment: trains in seconds on CPU threads, and its 1 MiB
  // buckets make several all-reduces overlap backward (the CLI keeps PyTorch's 25).
  static RunConfig defaultConfig();

  RunConfig config() const;
  void setConfig(const RunConfig& config);
  bool isValid() const { return m_error.isEmpty(); }
  // Run and Step may start the form's experiment: valid, and the form is not
  // standing aside for an imported trace.
  bool canRun() const { return isValid() && !m_imported; }
  // An imported trace (a PyTorch profiler job) is on screen: the form says what
  // it is (html: file, ranks, format) instead of showing a config that did not
  // run it; its fields hide and Run is off until a preset is picked, a config
  // is set, or "Edit an experiment" is pressed. clearImported() returns.
  void showImported(const QString& html);
  void clearImported();
  bool showsImported() const { return m_imported; }
  QString importedText() const;
  QString errorText() const { return m_error; }  // validate()'s message, empty when valid
  // A core message in the form's words: each --flag becomes its field's label
  // ("--batch 15 must be a multiple of --ranks 8" → "Global batch 15 must be a
  // multiple of ranks 8"). For the banner and dialogs.
  static QString guiWords(const QString& message);
  QPushButton* runButton() const { return m_run; }
  QPushButton* stopButton() const { return m_stop; }
  // Run and Stop in one row; the window keeps it below the form's scroll area,
  // so Run is on screen however tall the form grows.
  QWidget* buttonBar() const { return m_buttons; }
  void setRunning(bool running);

  void saveSettings(QSettings& settings) const;
  void restoreSettings(const QSettings& settings);

  // Fills the form with a built-in preset's first run and shows its text;
  // false (nothing changes) for an unknown name.
  bool selectPreset(const QString& name);
  // Shows a preset loaded from a file (already validated).
  void showPreset(const Preset& preset);
  // The form shows run `index` of the active preset (the run on screen) and
  // still holds the preset, so Run repeats the whole lesson.
  void showPresetRun(size_t index);
  // The form takes a run's config: the active preset's run with that config
  // when there is one (the preset stays), else the config as a custom experiment.
  void showRunConfig(const RunConfig& config);
  // The preset's run the form shows (0 when no preset is active).
  size_t shownPresetRun() const { return m_shownRun; }
  // The field the current error is shown under (nullptr: none, or at the bottom).
  QWidget* errorField() const { return m_errorField; }
  // The preset the form still holds (unedited since it was picked), if any.
  const Preset* activePreset() const { return m_active ? &*m_active : nullptr; }
  // Why the built-in presets could not be loaded (empty when they were).
  QString presetLoadError() const { return m_presetError; }

 signals:
  void runRequested();
  void stopRequested();
  void validityChanged(bool valid);
  void presetChanged();  // a preset was picked, or the form left it
  void edited();         // the user changed a field (not setConfig)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;  // the wheel edits only a focused field

 private:
  void revalidate();
  void updateVisibility();
  void updatePresetText();
  void updateRunButton();
  void placeError();  // under the field the message names (its first --flag), else at the bottom
  std::string configKey(const RunConfig& c) const;
  // The form's run: the CLI's defaults, then each field's text set through its
  // row where the row applies; *error: a field's text its row refused.
  RunConfig readForm(std::string* error) const;
  // The field of a row, by its preset key ("shard-group"); nullptr if none.
  SettingField* field(std::string_view key) const;

  std::vector<std::unique_ptr<SettingField>> m_fields;  // one per settings-table row in the form, in the CLI's order
  std::vector<std::pair<QGroupBox*, std::vector<SettingField*>>> m_groups;  // each box, with its fields
  QComboBox* m_preset;
  QLabel* m_presetText;
  QLabel* m_errorLabel;
  QVBoxLayout* m_box = nullptr;  // the panel's column, whose bottom holds an unplaced error
  QWidget* m_errorField = nullptr;     // the field marked invalid, if any
  QLabel* m_derived;
  QPushButton* m_run;
  QPushButton* m_stop;
  QWidget* m_buttons;
  QWidget* m_importedBox;     // the imported trace's description and the way back
  QLabel* m_importedNote;
  bool m_imported = false;
  QString m_error;
  QString m_presetError;
  std::optional<Preset> m_active;
  std::string m_activeKey;  // configKey() of the active preset's run the form shows
  size_t m_shownRun = 0;    // that run's index
  bool m_running = false;
  bool m_loading = false;
};

}  // namespace shardscope
