// The experiment form: every RunConfig knob, checked by the core's validate()
// on every edit, so the window refuses exactly what the CLI refuses, with the
// same message. Spin boxes deliberately allow a little more than is valid (the
// validator, not a silent clamp, tells the rule); knobs that do not apply to
// the chosen strategy, model or clock are hidden and left unset in the config.
#pragma once

#include <QWidget>

#include "engine/run_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QPushButton;
class QSettings;
class QSpinBox;

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
  QString errorText() const { return m_error; }  // validate()'s message, empty when valid
  QPushButton* runButton() const { return m_run; }
  QPushButton* stopButton() const { return m_stop; }
  void setRunning(bool running);

  void saveSettings(QSettings& settings) const;
  void restoreSettings(const QSettings& settings);

 signals:
  void runRequested();
  void stopRequested();
  void validityChanged(bool valid);

 private:
  void revalidate();
  void updateVisibility();

  QComboBox* m_strategy;
  QSpinBox* m_ranks;
  QSpinBox* m_shardGroup;
  QComboBox* m_model;
  QSpinBox* m_layers;
  QSpinBox* m_hidden;
  QSpinBox* m_heads;
  QSpinBox* m_seq;
  QSpinBox* m_vocab;
  QSpinBox* m_batch;
  QSpinBox* m_steps;
  QDoubleSpinBox* m_lr;
  QSpinBox* m_seed;
  QDoubleSpinBox* m_bucketMb;
  QDoubleSpinBox* m_firstBucketMb;
  QSpinBox* m_timeoutMs;
  QSpinBox* m_unitBlocks;
  QComboBox* m_prefetch;
  QCheckBox* m_reshard;
  QComboBox* m_clock;
  QComboBox* m_profile;
  QCheckBox* m_inject;
  QSpinBox* m_injectRank;
  QSpinBox* m_injectBlock;
  QFormLayout* m_strategyForm = nullptr;
  QFormLayout* m_modelForm = nullptr;
  QFormLayout* m_clockForm = nullptr;
  QFormLayout* m_faultForm = nullptr;
  QGroupBox* m_unitsBox = nullptr;
  QLabel* m_errorLabel;
  QLabel* m_derived;
  QPushButton* m_run;
  QPushButton* m_stop;
  QString m_error;
  bool m_running = false;
  bool m_loading = false;
};

}  // namespace shardscope
