#include "stepping_controls.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QStyle>
#include <QToolBar>
#include <QToolButton>

#include "engine_bridge.h"
#include "inspect/event_store.h"
#include "model/model_spec.h"
#include "parallel/fsdp_units.h"

namespace shardscope {

namespace {

struct Granularity {
  StepMode mode;
  const char* label;
  const char* shortcut;
  const char* tip;
};
// In menu order; the shortcuts follow it (Ctrl+1 … Ctrl+5, top to bottom).
const Granularity kGranularities[] = {
    {StepMode::NextOp, "op", "Ctrl+1", "the next forward, backward or optimizer op"},
    {StepMode::NextAction, "action", "Ctrl+2",
     "the next op, free of gathered parameters or collective launch (every line of the walkthrough)"},
    {StepMode::NextUnit, "unit", "Ctrl+3", "the first op of the next FSDP unit (or block)"},
    {StepMode::NextPhase, "phase", "Ctrl+4", "the next phase: forward, backward, update"},
    {StepMode::NextStep, "training step", "Ctrl+5", "the first op of the next training step"},
};

QString kindText(EventKind k) {
  switch (k) {
    case EventKind::Forward: return QObject::tr("forward");
    case EventKind::Backward: return QObject::tr("backward");
    case EventKind::OptimizerStep: return QObject::tr("the optimizer step");
    case EventKind::Free: return QObject::tr("freeing the gathered parameters");
    case EventKind::AllGather: return QObject::tr("launching the all-gather");
    case EventKind::ReduceScatter: return QObject::tr("launching the reduce-scatter");
    default: return QString::fromLatin1(eventKindName(k));
  }
}

// What a breakpoint index names for this config: FSDP units for sharded
// strategies, model segments (input, blocks, head) otherwise — as --break-unit.
std::vector<std::pair<int, QString>> breakTargets(const RunConfig& c) {
  std::vector<std::pair<int, QString>> out;
  try {
    const ModelSpec spec(c.model);
    if (c.isSharded()) {
      const FsdpUnits units(spec, c.unitBlocks(), 1);
      for (const FsdpUnit& u : units.units()) {
        QString label = QObject::tr("unit %1 · %2").arg(u.index).arg(QString::fromStdString(u.name));
        if (!u.blocks.empty())
          label += u.blocks.size() == 1 ? QObject::tr(" (block%1)").arg(u.blocks.front())
                                        : QObject::tr(" (blocks %1–%2)").arg(u.blocks.front()).arg(u.blocks.back());
        else
          label += QObject::tr(" (input and head)");
        out.emplace_back(u.index, label);
      }
    } else {
      for (int s = 0; s < spec.segmentCount(); ++s)
        out.emplace_back(s, QObject::tr("segment %1 · %2").arg(s).arg(QString::fromStdString(spec.segmentName(s))));
    }
  } catch (const std::exception&) {
    // An invalid form: no targets until it is fixed (the form says why).
  }
  return out;
}

}  // namespace

SteppingControls::SteppingControls(EngineBridge* bridge, std::function<RunConfig()> config, QWidget* parent)
    : QObject(parent), m_bridge(bridge), m_config(std::move(config)) {
  QStyle* s = parent->style();
  m_pause = new QAction(s->standardIcon(QStyle::SP_MediaPause), tr("&Pause"), this);
  m_pause->setShortcut(QKeySequence(Qt::Key_F6));
  m_pause->setToolTip(tr("Stop every rank in lockstep before its next compute op (F6); collectives in flight finish"));
  m_step = new QAction(s->standardIcon(QStyle::SP_MediaSeekForward), tr("S&tep"), this);
  m_step->setShortcut(QKeySequence(Qt::Key_F10));
  m_step->setToolTip(tr("Advance every rank to the next stop (F10); with no run, start the experiment paused"));
  m_continue = new QAction(s->standardIcon(QStyle::SP_MediaSkipForward), tr("&Continue"), this);
  m_continue->setShortcut(QKeySequence(Qt::Key_F5));
  m_continue->setToolTip(tr("Run on to the next breakpoint or the end (F5)"));
  m_pause->setObjectName(QStringLiteral("pauseAction"));
  m_step->setObjectName(QStringLiteral("stepAction"));
  m_continue->setObjectName(QStringLiteral("continueAction"));

  m_granularity = new QComboBox(parent);
  m_granularity->setObjectName(QStringLiteral("stepGranularity"));
  m_granularity->setToolTip(tr("What one Step advances by"));
  for (const Granularity& g : kGranularities)
    m_granularity->addItem(tr("by %1").arg(QLatin1String(g.label)), static_cast<int>(g.mode));

  m_breakMenu = new QMenu(tr("&Breakpoints"), parent);
  m_breakForward = m_breakMenu->addAction(tr("Before every forward"));
  m_breakBackward = m_breakMenu->addAction(tr("Before every backward"));
  m_breakOptimizer = m_breakMenu->addAction(tr("Before the optimizer step"));
  m_breakFree = m_breakMenu->addAction(tr("Before every free of gathered parameters"));
  m_breakGather = m_breakMenu->addAction(tr("Before every all-gather launch"));
  m_breakReduce = m_breakMenu->addAction(tr("Before every reduce-scatter launch"));
  m_unitMenu = m_breakMenu->addMenu(tr("Before unit / block"));
  m_breakMenu->addSeparator();
  m_breakMenu->addAction(tr("Clear all"), this, [this] { setBreakpoints({}, {}); });
  for (QAction* a : {m_breakForward, m_breakBackward, m_breakOptimizer, m_breakFree, m_breakGather, m_breakReduce}) {
    a->setCheckable(true);
    connect(a, &QAction::toggled, this, [this] { pushBreakpoints(); });
  }
  connect(m_unitMenu, &QMenu::aboutToShow, this, &SteppingControls::rebuildUnitMenu);

  connect(m_pause, &QAction::triggered, this, [this] {
    m_bridge->pause();
    updateEnabled(m_canStart);
  });
  connect(m_step, &QAction::triggered, this, &SteppingControls::onStep);
  connect(m_continue, &QAction::triggered, this, [this] {
    m_bridge->resume();
    updateEnabled(m_canStart);
  });
  rebuildUnitMenu();
}

void SteppingControls::addTo(QToolBar* bar, QMenu* menu) {
  bar->addAction(m_pause);
  bar->addAction(m_step);
  bar->addWidget(m_granularity);
  bar->addAction(m_continue);
  auto* breaks = new QToolButton(bar);
  m_breakButton = breaks;
  breaks->setObjectName(QStringLiteral("breakpointsButton"));
  breaks->setText(m_breakMenu->title().remove(QLatin1Char('&')));
  breaks->setToolTip(tr("Stop every rank before an op kind or a unit (as --break-on / --break-unit)"));
  breaks->setMenu(m_breakMenu);
  breaks->setPopupMode(QToolButton::InstantPopup);
  breaks->setToolButtonStyle(Qt::ToolButtonTextOnly);
  breaks->setStyleSheet(QStringLiteral("QToolButton { padding-right: 14px; }"));  // room for the menu arrow
  bar->addWidget(breaks);

  menu->addAction(m_pause);
  menu->addAction(m_step);
  QMenu* by = menu->addMenu(tr("Step &by"));
  auto* group = new QActionGroup(by);
  for (int i = 0; i < m_granularity->count(); ++i) {
    const Granularity& g = kGranularities[i];
    QAction* a = by->addAction(QString::fromLatin1(g.label));
    a->setCheckable(true);
    a->setShortcut(QKeySequence(QString::fromLatin1(g.shortcut)));
    a->setToolTip(tr("Step to %1").arg(QLatin1String(g.tip)));
    a->setChecked(i == m_granularity->currentIndex());
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, i] { m_granularity->setCurrentIndex(i); });
    connect(m_granularity, &QComboBox::currentIndexChanged, a, [a, i](int index) { a->setChecked(index == i); });
  }
  menu->addAction(m_continue);
  menu->addMenu(m_breakMenu);
}

void SteppingControls::updateEnabled(bool can_start) {
  m_canStart = can_start;
  const bool running = m_bridge->isRunning();
  const bool stopped = m_bridge->gateStop().has_value();
  // A breakpoint stops a free run too: Continue then releases it.
  const bool held = running && (stopped || m_bridge->isStepping());
  m_pause->setEnabled(running && !held);
  m_step->setEnabled(stopped || (!running && can_start));
  m_continue->setEnabled(held);
}

StepMode SteppingControls::granularity() const {
  return static_cast<StepMode>(m_granularity->currentData().toInt());
}

void SteppingControls::setGranularity(StepMode mode) {
  const int i = m_granularity->findData(static_cast<int>(mode));
  if (i >= 0) m_granularity->setCurrentIndex(i);
}

void SteppingControls::onStep() {
  if (m_bridge->gateStop()) {
    m_bridge->step(granularity());
  } else if (!m_bridge->isRunning() && m_canStart) {
    emit startPausedRequested();
  }
}

void SteppingControls::setBreakpoints(std::set<EventKind> kinds, std::set<int> units_or_blocks) {
  m_units = std::move(units_or_blocks);
  {
    const QSignalBlocker b1(m_breakForward), b2(m_breakBackward), b3(m_breakOptimizer), b4(m_breakFree),
        b5(m_breakGather), b6(m_breakReduce);
    m_breakForward->setChecked(kinds.count(EventKind::Forward));
    m_breakBackward->setChecked(kinds.count(EventKind::Backward));
    m_breakOptimizer->setChecked(kinds.count(EventKind::OptimizerStep));
    m_breakFree->setChecked(kinds.count(EventKind::Free));
    m_breakGather->setChecked(kinds.count(EventKind::AllGather));
    m_breakReduce->setChecked(kinds.count(EventKind::ReduceScatter));
  }
  pushBreakpoints();
}

void SteppingControls::pushBreakpoints() {
  m_kinds.clear();
  if (m_breakForward->isChecked()) m_kinds.insert(EventKind::Forward);
  if (m_breakBackward->isChecked()) m_kinds.insert(EventKind::Backward);
  if (m_breakOptimizer->isChecked()) m_kinds.insert(EventKind::OptimizerStep);
  if (m_breakFree->isChecked()) m_kinds.insert(EventKind::Free);
  if (m_breakGather->isChecked()) m_kinds.insert(EventKind::AllGather);
  if (m_breakReduce->isChecked()) m_kinds.insert(EventKind::ReduceScatter);
  m_bridge->setBreakpoints(m_kinds, m_units);
  const int count = static_cast<int>(m_kinds.size() + m_units.size());
  m_breakMenu->setTitle(count ? tr("&Breakpoints (%1)").arg(count) : tr("&Breakpoints"));
  if (m_breakButton) m_breakButton->setText(m_breakMenu->title().remove(QLatin1Char('&')));
}

void SteppingControls::rebuildUnitMenu() {
  m_unitMenu->clear();
  const auto targets = breakTargets(m_config());
  if (targets.empty()) m_unitMenu->addAction(tr("(fix the experiment form first)"))->setEnabled(false);
  for (const auto& [index, label] : targets) {
    QAction* a = m_unitMenu->addAction(label);
    a->setCheckable(true);
    a->setChecked(m_units.count(index));
    connect(a, &QAction::toggled, this, [this, index = index](bool on) {
      if (on)
        m_units.insert(index);
      else
        m_units.erase(index);
      pushBreakpoints();
    });
  }
}

QString SteppingControls::describe(const std::vector<GatePoint>& points, bool lockstep, const EventStore& store) {
  if (points.empty()) return {};
  const GatePoint& p = points.front();
  if (const RunConfig* c = store.config(); p.slot >= 0 && c && c->pp > 1 && c->ranks % c->pp == 0) {
    // A pipeline stops at a slot of its schedule: each stage before its own next pass.
    QStringList stages;
    const int per_stage = c->ranks / c->pp;
    constexpr int kStagesNamed = 4;
    for (int s = 0; s < std::min(c->pp, kStagesNamed); ++s) {
      const size_t r = static_cast<size_t>(s * per_stage);
      if (r >= points.size()) break;
      const GatePoint& q = points[r];
      stages << (q.microbatch < 0 ? tr("stage %1 before its flush").arg(s)
                                  : tr("stage %1 before the %2 of microbatch %3").arg(s).arg(kindText(q.kind)).arg(q.microbatch));
    }
    if (c->pp > kStagesNamed) stages << tr("…");
    return tr("step %1 · %2 · every stage stopped before its next pass").arg(p.step).arg(stages.join(QStringLiteral(", ")));
  }
  QString where;
  if (p.block >= 0)
    where = tr("before %1 of %2").arg(kindText(p.kind), QString::fromStdString(store.blockName(p.block)));
  else if (p.unit >= 0 && !isComputeGate(p.kind))
    where = tr("before %1 of unit %2").arg(kindText(p.kind)).arg(p.unit);
  else if (p.kind == EventKind::AllGather)
    where = tr("before launching the all-gather of the updated parameters");
  else
    where = tr("before %1").arg(kindText(p.kind));
  if (p.unit >= 0 && p.block >= 0) where += tr(" (unit %1)").arg(p.unit);
  const QString ranks = lockstep ? tr("all %1 ranks").arg(points.size())
                                 : tr("ranks NOT in lockstep (rank 0 shown)");
  return tr("step %1 · %2 · %3").arg(p.step).arg(where, ranks);
}

}  // namespace shardscope
