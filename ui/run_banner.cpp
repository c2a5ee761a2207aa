#include "run_banner.h"
#include "common/units.h"

#include "inspect/event_store.h"
#include "stepping_controls.h"
#include "quantity_text.h"

namespace shardscope {

RunBanner::RunBanner(QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("runBanner"));
  setWordWrap(true);
  setTextInteractionFlags(Qt::TextSelectableByMouse);
  setVisible(false);
}

void RunBanner::showMessage(const QString& text, bool error) {
  m_isGate = false;
  m_isError = error && !text.isEmpty();
  setStyleSheet(error ? QStringLiteral("QLabel { background: #FDECEE; color: #8A0018; border-bottom: 1px solid #F2B8BF; padding: 6px 10px; }")
                      : QStringLiteral("QLabel { background: #EAF3FB; color: #0B3C5D; border-bottom: 1px solid #B9D6EE; padding: 6px 10px; }"));
  setText((error ? tr("<b>Run stopped:</b> ") : QString()) + text.toHtmlEscaped());
  setVisible(!text.isEmpty());
}

void RunBanner::showGateStop(const EngineBridge::GateStop& stop, const EventStore& store,
                             const std::array<int64_t, kCategoryCount>& rank0, StepMode granularity) {
  const GatePoint& p = stop.points.front();
  QString html = tr("<b>Paused</b> — %1.").arg(SteppingControls::describe(stop.points, stop.lockstep, store).toHtmlEscaped());
  const int64_t gathered = rank0[static_cast<size_t>(Category::Gathered)];
  const int64_t grad_full = rank0[static_cast<size_t>(Category::GradFull)];
  if (gathered > 0 || p.unit >= 0 || store.shardGroup() > 0)  // sharded runs: always what is gathered
    html += tr(" Rank 0 holds %1 of gathered parameters and %2 of full gradients here.")
                .arg(quantity_text::sizeText(double(gathered), 2, ByteUnit::MiB),
                     quantity_text::sizeText(double(grad_full), 2, ByteUnit::MiB));
  html += tr(" Every view shows this moment (the cursor). <b>F10</b> steps by %1, <b>F5</b> continues, <b>Ctrl+.</b> stops.")
              .arg(granularity == StepMode::NextOp       ? tr("op")
                   : granularity == StepMode::NextAction ? tr("action")
                   : granularity == StepMode::NextUnit ? tr("unit")
                   : granularity == StepMode::NextPhase ? tr("phase")
                                                        : tr("training step"));
  showMessage(QString(), false);
  setText(html);
  setVisible(true);
  m_isGate = true;
}

void RunBanner::clearError() {
  if (m_isError) {
    m_isError = false;
    setVisible(false);
  }
}

void RunBanner::gateReleased() {
  if (!isHidden() && m_isGate) setVisible(false);
}

}  // namespace shardscope
