#include "step_walkthrough.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "theme.h"
#include "palette.h"
#include "inspect/event_store.h"

namespace shardscope {

StepWalkthrough::StepWalkthrough(const EventStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
  m_title = new QLabel(this);
  m_title->setObjectName(QStringLiteral("walkthroughTitle"));
  QFont f = m_title->font();
  f.setBold(true);
  m_title->setFont(f);
  m_source = new QLabel(this);
  m_source->setWordWrap(true);  // else a long source line widens the dock past its screen and cuts every line
  setTone(m_source, Tone::Muted);
  m_where = new QLabel(this);
  m_where->setWordWrap(true);
  setTone(m_where, Tone::Note);
  m_note = new QLabel(this);
  m_note->setWordWrap(true);
  m_note->setStyleSheet(QStringLiteral("font-style: italic;"));
  setTone(m_note, Tone::Note);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(8, 6, 8, 6);
  box->setSpacing(3);
  auto* head = new QHBoxLayout;
  head->addWidget(m_title);
  head->addWidget(m_source, 1);
  box->addLayout(head);
  box->addWidget(m_where);
  m_lines = new QVBoxLayout;
  m_lines->setSpacing(1);
  box->addLayout(m_lines);
  box->addWidget(m_note);
  box->addStretch(1);
  refresh();
}

void StepWalkthrough::refresh() {
  m_model.sync(*m_store);
  if (m_model.current().title != m_shownTitle || m_rows.empty()) rebuildLines();
  updateLit();
}

void StepWalkthrough::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  updateLit();
}

QString StepWalkthrough::lineText(int line) const {
  return line >= 0 && line < lineCount() ? m_rows[static_cast<size_t>(line)].text->text() : QString();
}

void StepWalkthrough::rebuildLines() {
  for (Row& r : m_rows) delete r.frame;
  m_rows.clear();
  const Algorithm& a = m_model.current();
  m_shownTitle = a.title;
  m_title->setText(a.title);
  m_source->setText(QStringLiteral("· ") + a.source);
  m_note->setText(a.note);
  m_note->setVisible(!a.note.isEmpty());
  for (size_t i = 0; i < a.lines.size(); ++i) {
    Row row;
    row.frame = new QFrame(this);
    row.frame->setObjectName(QStringLiteral("line%1").arg(i + 1));
    auto* h = new QHBoxLayout(row.frame);
    h->setContentsMargins(4, 1, 4, 1);
    h->setSpacing(6);
    row.number = new QLabel(QString::number(i + 1), row.frame);
    row.number->setFixedWidth(18);
    row.number->setAlignment(Qt::AlignRight | Qt::AlignTop);
    setTone(row.number, Tone::Muted);
    const bool header = std::find(a.headers.begin(), a.headers.end(), static_cast<int>(i)) != a.headers.end();
    row.text = new QLabel(a.lines[i], row.frame);
    row.text->setWordWrap(true);
    // Loop bodies indented under their headers, as in the FSDP reference text.
    row.text->setContentsMargins(header || i + 1 == a.lines.size() ? 0 : 14, 0, 0, 0);
    row.lane = new QLabel(row.frame);
    row.lane->setStyleSheet(QStringLiteral("color: #7A5C00; font-size: 8pt;"));  // only shown on a lit (yellow) row
    row.lane->setAlignment(Qt::AlignRight | Qt::AlignTop);
    h->addWidget(row.number);
    h->addWidget(row.text, 1);
    h->addWidget(row.lane);
    m_lines->addWidget(row.frame);
    m_rows.push_back(row);
  }
}

void StepWalkthrough::setGateOp(std::optional<EventKind> kind, int64_t at_ns) {
  m_gateOp = kind;
  m_gateNs = at_ns;
  updateLit();
}

void StepWalkthrough::updateLit() {
  const auto pending = m_cursor && *m_cursor == m_gateNs ? m_gateOp : std::nullopt;
  m_lit = m_cursor && !m_store->empty() ? m_model.litAt(*m_cursor, pending) : std::vector<LitLine>{};
  for (size_t i = 0; i < m_rows.size(); ++i) {
    Row& row = m_rows[i];
    const LitLine* lit = nullptr;
    for (const LitLine& l : m_lit)
      if (l.line == static_cast<int>(i)) lit = &l;
    const bool phase = lit && lit->lane == QLatin1String("phase");
    const int state = !lit ? 0 : phase ? 1 : lit->primary ? 2 : 3;
    const QString lane = lit && !phase ? lit->lane : QString();
    if (row.lane->text() != lane) row.lane->setText(lane);
    // Re-polishing a style sheet costs milliseconds: only on a change.
    if (state == row.shown) continue;
    row.shown = state;
    const QString name = row.frame->objectName();
    row.frame->setStyleSheet(
        state == 0   ? QStringLiteral("QFrame#%1 { background: transparent; }").arg(name)
        : state == 1 ? QStringLiteral("QFrame#%1 { background: #E3EDF7; border-radius: 3px; } QFrame#%1 QLabel { color: #1A1A1A; }").arg(name)
        : state == 2 ? QStringLiteral("QFrame#%1 { background: #FFE08A; border: 1px solid #E0B000; border-radius: 3px; } "
                                      "QFrame#%1 QLabel { color: #1A1A1A; }").arg(name)
                     : QStringLiteral("QFrame#%1 { background: #FFF3CC; border: 1px dashed #E0B000; border-radius: 3px; } "
                                      "QFrame#%1 QLabel { color: #1A1A1A; }").arg(name));
    QFont f = row.text->font();
    f.setBold(lit != nullptr);
    row.text->setFont(f);
  }
  if (m_store->empty()) {
    m_where->setText(tr("The lines light up as a run's cursor moves through a step."));
  } else if (m_store->meta().imported) {
    // The walkthrough follows ShardScope's own runs only (the note above says so).
    m_where->setText(tr("Click the timeline to place the cursor; the memory view follows it."));
  } else if (!m_cursor) {
    m_where->setText(tr("Click the timeline (or scrub the units view) to place the cursor; the lines rank 0 is on "
                        "light up, with the lane that is busy."));
  } else {
    const int step = m_model.stepAt(*m_cursor);
    m_where->setText(step >= 0 ? tr("rank 0 · step %1 · t = %2 ms").arg(step).arg(static_cast<double>(*m_cursor) * 1e-6, 0, 'f', 3)
                               : tr("t = %1 ms: outside every step").arg(static_cast<double>(*m_cursor) * 1e-6, 0, 'f', 3));
  }
}

}  // namespace shardscope
