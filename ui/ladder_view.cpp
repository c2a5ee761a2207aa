#include "ladder_view.h"

#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSharedPointer>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

#include "figure_export.h"
#include "palette.h"
#include "plot_style.h"

namespace shardscope {

using postmortem::FrCell;
using postmortem::FrLadder;

namespace {

constexpr double kCellHalfWidth = 0.44;   // of a column
constexpr double kCellHalfHeight = 0.38;  // of a row
constexpr int kRowsShown = 20;            // rows in view when a ladder opens

// Okabe–Ito hues, pale enough for black text: what the collective's state says.
QColor ladderFill(FrCell c) {
  switch (c) {
    case FrCell::Completed: return QColor(0xb8, 0xe0, 0xcf);   // bluish green, pale
    case FrCell::Started: return QColor(0xf2, 0xc2, 0x4f);     // orange: inside it, waiting
    case FrCell::Scheduled: return QColor(0xa8, 0xd5, 0xf2);   // sky blue: queued
    case FrCell::Missing: return QColor(0xff, 0xff, 0xff);     // never issued: outlined, dashed
    case FrCell::Overwritten: return QColor(0xe4, 0xe4, 0xe4); // lost from the ring
    case FrCell::NotInDump: return QColor(0xf2, 0xf2, 0xf2);   // left out of the dump (its ring never wrapped)
    case FrCell::NotMember: break;
  }
  return Qt::transparent;
}

const QColor kCulprit(0xc0, 0x1c, 0x1c);
const QColor kMismatchBand(0xfb, 0xe3, 0xe0);

}  // namespace

// Paints the cells in the axis rect (key: column, value: row reversed), the
// first mismatch's band under them and the selected row's outline.
class LadderPlottable : public QCPAbstractPlottable {
 public:
  LadderPlottable(QCPAxis* key, QCPAxis* value) : QCPAbstractPlottable(key, value) {}
  void setLadder(const FrLadder* l, const std::vector<postmortem::FrRankDump>* dumps) {
    m_ladder = l;
    m_dumps = dumps;
  }
  void setSelectedRow(int row) { m_selected = row; }

  double selectTest(const QPointF&, bool, QVariant*) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain) const override {
    found = m_ladder && !m_ladder->ranks.empty();
    return QCPRange(-0.5, found ? static_cast<double>(m_ladder->ranks.size()) - 0.5 : 0.5);
  }
  QCPRange getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const override {
    found = m_ladder && !m_ladder->rows.empty();
    return QCPRange(-0.5, found ? static_cast<double>(m_ladder->rows.size()) - 0.5 : 0.5);
  }
  QRectF cellRect(int row, int col, double hw = kCellHalfWidth, double hh = kCellHalfHeight) const {
    const QPointF a = coordsToPixels(col - hw, row - hh), b = coordsToPixels(col + hw, row + hh);
    return QRectF(a, b).normalized();
  }

 protected:
  void draw(QCPPainter* p) override {
    if (!m_ladder || m_ladder->rows.empty()) return;
    const FrLadder& l = *m_ladder;
    const QCPRange rows = mValueAxis->range();
    const int first = std::max(0, static_cast<int>(std::floor(rows.lower)));
    const int last = std::min(static_cast<int>(l.rows.size()) - 1, static_cast<int>(std::ceil(rows.upper)));
    const int cols = static_cast<int>(l.ranks.size());
    const double scale = FigureExport::lineScale();
    if (l.mismatch_row >= first && l.mismatch_row <= last) {
      const QRectF band = cellRect(l.mismatch_row, 0, 0.5, 0.5).united(cellRect(l.mismatch_row, cols - 1, 0.5, 0.5));
      p->fillRect(band, Palette::themed(kMismatchBand));
    }
    const QRectF one = cellRect(0, 0);
    const bool text = one.height() >= 11 && one.width() >= 40;
    QFont font = FigureExport::paintFont(mParentPlot->font(), 9);
    p->setFont(font);
    for (int r = first; r <= last; ++r) {
      for (int c = 0; c < cols; ++c) {
        const postmortem::FrLadderCellInfo& cell = l.cell(r, c);
        if (cell.state == FrCell::NotMember) continue;
        const QRectF box = cellRect(r, c);
        // Pale fills are neutral to the theme (as the legend's swatches, which followTheme maps).
        const QColor fill = Palette::themed(ladderFill(cell.state));
        p->setBrush(fill);
        QPen pen(Palette::themed(QColor(0x70, 0x70, 0x70)), scale);
        if (cell.state == FrCell::Missing) pen = QPen(Palette::themed(QColor(0x40, 0x40, 0x40)), 1.2 * scale, Qt::DashLine);
        if (cell.culprit) pen = QPen(kCulprit, 3 * scale);
        p->setPen(pen);
        p->drawRect(box);
        if (text) {
          QString label = QString::fromUtf8(postmortem::frCellName(cell.state).data(),
                                            static_cast<int>(postmortem::frCellName(cell.state).size()));
          if (cell.differs && cell.entry >= 0) {
            for (const auto& d : *m_dumps)
              if (d.rank == l.ranks[static_cast<size_t>(c)])
                label += QStringLiteral(" · ") + QString::fromStdString(d.entries[static_cast<size_t>(cell.entry)].op());
          }
          p->setPen(cell.culprit && cell.state == FrCell::Missing ? kCulprit : Palette::textOn(fill));  // red reads on the blank cell only
          p->drawText(box, Qt::AlignCenter, p->fontMetrics().elidedText(label, Qt::ElideRight, static_cast<int>(box.width()) - 4));
        }
      }
    }
    if (m_selected >= first && m_selected <= last) {
      p->setBrush(Qt::NoBrush);
      p->setPen(QPen(Palette::selection(Theme::Light), 2 * scale));
      p->drawRect(cellRect(m_selected, 0, 0.49, 0.49).united(cellRect(m_selected, cols - 1, 0.49, 0.49)));
    }
  }
  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}

 private:
  const std::vector<postmortem::FrRankDump>* m_dumps = nullptr;
  const FrLadder* m_ladder = nullptr;
  int m_selected = -1;
};

LadderView::LadderView(QWidget* parent)
    : QWidget(parent), m_plot(new QCustomPlot(this)), m_detail(new QPlainTextEdit(this)) {
  setObjectName(QStringLiteral("ladderView"));
  m_plot->setObjectName(QStringLiteral("ladderPlot"));
  m_detail->setObjectName(QStringLiteral("ladderDetail"));
  m_detail->setReadOnly(true);
  m_detail->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_detail->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_detail->setPlaceholderText(tr("Click a cell: that collective's entry and stack on every rank."));
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_plot);
  split->addWidget(m_detail);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  auto* box = new QVBoxLayout(this);
  box->setContentsMargins(4, 4, 4, 4);
  box->addWidget(split);

  // The legend row's one-line width would otherwise be the dock's minimum (and widen the window).
  m_plot->setMinimumSize(240, 160);
  m_detail->setMinimumSize(240, 60);
  PlotStyle::styleAxes(m_plot);
  m_plot->xAxis->setVisible(false);
  m_plot->xAxis2->setVisible(true);  // ranks across the top, as the columns' heads
  PlotStyle::styleCategoryAxis(m_plot->xAxis2);
  PlotStyle::styleCategoryAxis(m_plot->yAxis);
  m_plot->xAxis2->setLabel(tr("rank"));
  // No value-axis title: each row's label says it ("default_pg #4 all_reduce"), and a narrow dock clips one.
  m_plot->yAxis->setRangeReversed(true);  // the oldest collective on top, as the ring runs
  m_cells = new LadderPlottable(m_plot->xAxis2, m_plot->yAxis);
  m_plot->legend->removeItem(m_plot->legend->itemWithPlottable(m_cells));  // the swatches below name the states
  m_plot->axisRect()->setRangeDrag(Qt::Vertical);
  m_plot->axisRect()->setRangeZoom(Qt::Vertical);
  m_plot->axisRect()->setRangeDragAxes(nullptr, m_plot->yAxis);
  m_plot->axisRect()->setRangeZoomAxes(nullptr, m_plot->yAxis);
  m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  m_plot->plotLayout()->insertRow(0);
  m_sentence = new QCPTextElement(m_plot, QString(), QFont(font().family(), 9, QFont::Bold));
  m_sentence->setObjectName(QStringLiteral("ladderSentence"));
  m_sentence->setTextColor(kCulprit);
  m_plot->plotLayout()->addElement(0, 0, m_sentence);
  // A legend of the states: empty bars carry the swatches.
  const std::pair<FrCell, QString> states[] = {{FrCell::Completed, tr("completed")},
                                               {FrCell::Started, tr("started (waiting)")},
                                               {FrCell::Scheduled, tr("scheduled")},
                                               {FrCell::Missing, tr("missing")},
                                               {FrCell::Overwritten, tr("overwritten")},
                                               {FrCell::NotInDump, tr("not in the dump")}};
  for (const auto& [state, name] : states) {
    auto* swatch = new QCPBars(m_plot->xAxis2, m_plot->yAxis);
    swatch->setName(name);
    swatch->setBrush(ladderFill(state));
    swatch->setPen(state == FrCell::Missing ? QPen(QColor(0x40, 0x40, 0x40), 1.2, Qt::DashLine) : QPen(QColor(0x70, 0x70, 0x70)));
  }
  auto* culprit = new QCPBars(m_plot->xAxis2, m_plot->yAxis);
  culprit->setName(tr("culprit"));
  culprit->setBrush(Qt::white);
  culprit->setPen(QPen(kCulprit, 3));
  PlotStyle::styleLegendRow(m_plot, font());
  PlotStyle::updateLegendRow(m_plot, false);
  PlotStyle::followTheme(m_plot);
  m_empty = PlotStyle::emptyMessage(m_plot, tr("Open a folder of flight-recorder dumps (File ▸ Open flight-recorder "
                                               "dumps, or shardscope --open DIR), or run an experiment: its collectives "
                                               "show here as a ladder."));
  connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return;
    const auto [row, col] = cellAt(e->pos());
    if (row >= 0) selectRow(row);
  });
  setDumps(nullptr, {});
}

void LadderView::setDumps(std::shared_ptr<const std::vector<postmortem::FrRankDump>> dumps, const QString& source) {
  m_dumps = dumps ? std::move(dumps) : std::make_shared<const std::vector<postmortem::FrRankDump>>();
  m_source = source;
  m_ladder = postmortem::buildFrLadder(*m_dumps);
  m_cells->setLadder(&m_ladder, m_dumps.get());
  m_selected = -1;
  m_cells->setSelectedRow(-1);
  m_empty->setVisible(m_ladder.rows.empty());
  auto columns = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t c = 0; c < m_ladder.ranks.size(); ++c)
    columns->addTick(static_cast<double>(c), QString::number(m_ladder.ranks[c]));
  m_plot->xAxis2->setTicker(columns);
  auto rows = QSharedPointer<QCPAxisTickerText>::create();
  for (size_t r = 0; r < m_ladder.rows.size(); ++r)
    rows->addTick(static_cast<double>(r), QString::fromStdString(m_ladder.rows[r].label));
  m_plot->yAxis->setTicker(rows);
  m_plot->xAxis2->setRange(-0.5, std::max<double>(0.5, static_cast<double>(m_ladder.ranks.size()) - 0.5));
  const int n = static_cast<int>(m_ladder.rows.size());
  // The first mismatch in view with what led up to it; else the newest rows.
  const int anchor = m_ladder.mismatch_row >= 0 ? std::min(n - 1, m_ladder.mismatch_row + 3) : n - 1;
  showRows(std::max(0, anchor - kRowsShown + 1), anchor);
  wrapSentence();
  m_detail->setPlainText(QString());
  if (m_ladder.mismatch_row >= 0) selectRow(m_ladder.mismatch_row);
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LadderView::showRows(int first, int last) {
  // Never fewer than kMinRows rows of room: a three-collective ring keeps cells of a readable size.
  constexpr int kMinRows = 6;
  m_plot->yAxis->setRange(first - 0.5, std::max(last, first + kMinRows - 1) + 0.5);
}

void LadderView::selectRow(int row) {
  if (row >= static_cast<int>(m_ladder.rows.size())) row = -1;
  m_selected = row;
  m_cells->setSelectedRow(row);
  m_detail->setPlainText(QString::fromStdString(postmortem::frLadderRowDetail(m_ladder, *m_dumps, row)));
  m_plot->replot(QCustomPlot::rpQueuedReplot);
  emit rowSelected(row);
}

QString LadderView::detailText() const { return m_detail->toPlainText(); }

QString LadderView::sentenceText() const { return QString::fromStdString(m_ladder.sentence); }

std::pair<int, int> LadderView::cellAt(const QPoint& pos) const {
  if (m_ladder.rows.empty() || !m_plot->axisRect()->rect().contains(pos)) return {-1, -1};
  const double col = m_plot->xAxis2->pixelToCoord(pos.x()), row = m_plot->yAxis->pixelToCoord(pos.y());
  const int c = static_cast<int>(std::lround(col)), r = static_cast<int>(std::lround(row));
  if (c < 0 || r < 0 || c >= static_cast<int>(m_ladder.ranks.size()) || r >= static_cast<int>(m_ladder.rows.size()))
    return {-1, -1};
  return {r, c};
}

QPoint LadderView::cellCenter(int row, int column) const {
  return QPoint(static_cast<int>(m_plot->xAxis2->coordToPixel(column)), static_cast<int>(m_plot->yAxis->coordToPixel(row)));
}

QString LadderView::figureTitle() const {
  return tr("Collective ladder: each rank's flight-recorder entries, by process group and sequence number");
}

void LadderView::wrapSentence(int chars) {
  QString text = QString::fromStdString(m_ladder.sentence);
  if (m_ladder.rows.empty()) text.clear();
  // Wrapped at the plot's width, a line per clause when it is long.
  if (chars <= 0)
    chars = std::max(40, (m_plot->width() - 16) / std::max(1, QFontMetrics(m_sentence->font()).averageCharWidth() + 1));
  m_sentence->setText(PlotStyle::wrappedText(text, chars));
  m_sentence->setVisible(!text.isEmpty());
}

void LadderView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  wrapSentence();
}

}  // namespace shardscope
