#include "run_status.h"

#include <QEvent>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QStringList>
#include <QStatusBar>
#include <QTimer>

#include "engine_bridge.h"
#include "inspection.h"

namespace shardscope {

namespace {

QLabel* statusLabel(const QString& text, const QString& tip, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setToolTip(tip);
  label->setContentsMargins(6, 0, 6, 0);
  return label;
}

}  // namespace

RunStatus::RunStatus(const Inspection* inspection, const EngineBridge* bridge, QStatusBar* bar)
    : QObject(bar), m_inspection(inspection), m_bridge(bridge) {
  QWidget* parent = bar->parentWidget();
  m_sourceLabel = statusLabel(QString(), tr("Where the events come from"), parent);
  // The longest text of the bar ("preset … · zero3 · 8 ranks · … events"): it
  // gives way (elided, whole in its tooltip) instead of widening the window
  // past a 1280 px screen.
  m_sourceLabel->setMinimumWidth(80);
  m_sourceLabel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  m_sourceLabel->installEventFilter(this);
  m_stepLabel = statusLabel(QString(), tr("Completed training steps"), parent);
  m_lossLabel = statusLabel(QString(), tr("Mean loss over ranks, last completed step"), parent);
  m_elapsedLabel = statusLabel(QString(), tr("Wall time of the run"), parent);
  m_progress = new QProgressBar(parent);
  m_progress->setMaximumWidth(160);
  m_progress->setMaximumHeight(16);
  m_progress->setTextVisible(true);
  m_progress->setFormat(tr("%v / %m steps"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  bar->addWidget(m_sourceLabel, 1);
  bar->addPermanentWidget(m_stepLabel);
  bar->addPermanentWidget(m_lossLabel);
  bar->addPermanentWidget(m_elapsedLabel);
  m_backendLabel = statusLabel(tr("backend cpu"), tr("Ranks are CPU threads; collectives run on Gloo"), parent);
  bar->addPermanentWidget(m_backendLabel);
  m_clockLabel = statusLabel(tr("clock measured"), QString(), parent);
  bar->addPermanentWidget(m_clockLabel);
  bar->addPermanentWidget(m_progress);
  m_elapsedTimer = new QTimer(this);
  m_elapsedTimer->setInterval(200);
  connect(m_elapsedTimer, &QTimer::timeout, this, &RunStatus::update);
}

void RunStatus::elideSource() {
  const QMargins m = m_sourceLabel->contentsMargins();
  m_sourceLabel->setText(
      m_sourceLabel->fontMetrics().elidedText(m_source, Qt::ElideMiddle, m_sourceLabel->width() - m.left() - m.right()));
}

bool RunStatus::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_sourceLabel && event->type() == QEvent::Resize) elideSource();
  return QObject::eventFilter(watched, event);
}

void RunStatus::setProgress(int done, int steps) {
  m_progress->setRange(0, steps);
  m_progress->setValue(done);
}

void RunStatus::startClock() { m_elapsedTimer->start(); }
void RunStatus::stopClock() { m_elapsedTimer->stop(); }

void RunStatus::update() {
  const EventStore& store = m_inspection->store();
  const ShownRun& shown = m_inspection->run();
  const RunConfig* config = m_inspection->runConfig();
  const RunTrace& meta = store.meta();
  QString source = shown.source.isEmpty() ? tr("no run") : shown.source;
  if (!meta.strategy.empty())
    source += tr(" · %1 · %2 · %3 M params · %4 events")
                  .arg(QString::fromStdString(meta.strategy))
                  .arg(QString::fromStdString(meta.ranksText()))
                  .arg(static_cast<double>(meta.params) * 1e-6, 0, 'f', 2)
                  .arg(QLocale().toString(static_cast<qulonglong>(store.eventCount())));
  m_source = source;
  m_sourceLabel->setToolTip(tr("Where the events come from: %1").arg(source));
  elideSource();
  m_progress->setFormat(store.empty() ? tr("no steps") : tr("%v / %m steps"));
  if (const auto& imported = meta.imported) {
    // A PyTorch profiler trace: ShardScope ran nothing, so no backend or clock of its own.
    QStringList files;
    for (const std::string& f : imported->files) files << QString::fromStdString(f);
    m_backendLabel->setText(tr("imported PyTorch trace · %1").arg(shown.source));
    m_backendLabel->setToolTip(tr("%1, %2 ranks: %3").arg(QString::fromStdString(imported->format)).arg(meta.ranks)
                                   .arg(files.join(QStringLiteral(", "))));
    m_clockLabel->setText(tr("clock profiler"));
    m_clockLabel->setToolTip(tr("The profiler's own timestamps, each rank's aligned to the job's first event"));
  } else if (m_inspection->modeledClock()) {
    const QString profile = QString::fromStdString(m_inspection->clockProfile());
    m_clockLabel->setText(tr("clock modeled · %1").arg(profile));
    m_clockLabel->setToolTip(tr("Times are op costs priced under the %1 hardware profile (deterministic), "
                                "not this machine's time").arg(profile));
  } else {
    m_clockLabel->setText(tr("clock measured"));
    const bool gpu = config && isGpuBackend(config->backend);
    m_clockLabel->setToolTip(gpu ? tr("Op spans are CUDA-event times on each GPU stream; instants and memory events "
                                      "are host times (when the work was launched)")
                                 : tr("Times are this machine's steady clock"));
  }
  const auto& losses = store.losses();
  const bool live = m_bridge->isRunning() || shown.live();
  // A trace without a readable config does not say what it ran on.
  const bool known = config || meta.strategy.empty();
  const Backend backend = config ? config->backend : Backend::Cpu;
  const bool meta_backend = known && backend == Backend::Meta;
  if (!meta.imported) {  // an imported trace's label is set above
    m_backendLabel->setText(known ? tr("backend %1").arg(QString::fromStdString(backendName(backend)))
                                  : tr("backend unknown"));
    if (!known)
      m_backendLabel->setToolTip(tr("The trace records no config this version can read, so not what it ran on"));
    else switch (backend) {
      case Backend::Meta:
        m_backendLabel->setToolTip(tr("Shapes only: no math and no bytes, but the same engine, ledger and traffic, "
                                      "priced on the modeled clock"));
        break;
      case Backend::Cuda:
        m_backendLabel->setToolTip(tr("One rank per GPU; collectives run on NCCL; op spans are CUDA-event times"));
        break;
      case Backend::CudaEmulated:
        m_backendLabel->setToolTip(tr("Every rank on GPU 0 with its own streams and memory; collectives are device "
                                      "copies and reductions; op spans are CUDA-event times"));
        break;
      case Backend::Cpu:
        m_backendLabel->setToolTip(tr("Ranks are CPU threads; collectives run on Gloo"));
        break;
    }
  }
  m_stepLabel->setText(live ? tr("step %1 / %2").arg(losses.size()).arg(m_bridge->config().steps) : tr("step –"));
  m_lossLabel->setText(losses.empty() || meta_backend ? tr("loss –")
                                                                   : tr("loss %1").arg(losses.back(), 0, 'f', 4));
  const double elapsed = m_bridge->elapsedSeconds();
  m_elapsedLabel->setText(live ? tr("%1 s").arg(elapsed, 0, 'f', elapsed < 10 ? 2 : 1)
                          : store.empty() ? tr("– s")
                                          : tr("%1 ms traced").arg(static_cast<double>(store.endNs()) * 1e-6, 0, 'f', 1));
}

}  // namespace shardscope
