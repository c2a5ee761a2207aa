#include "plot_style.h"

#include <qcustomplot.h>

#include <QAbstractScrollArea>
#include <QCoreApplication>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <functional>
#include <vector>

#include "palette.h"
#include "trace/rank_copies.h"
#include "theme.h"

namespace shardscope {

namespace {

// One filter for every plot that passes its wheel on (PlotStyle::wheelScrollsPage).
class WheelToPageFilter : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    auto* plot = qobject_cast<QCustomPlot*>(watched);
    if (!plot || plot->interactions().testFlag(QCP::iRangeZoom)) return false;
    for (QWidget* w = plot->parentWidget(); w; w = w->parentWidget())
      if (auto* area = qobject_cast<QAbstractScrollArea*>(w)) {
        QScrollBar* bar = area->verticalScrollBar();
        if (bar && bar->maximum() > bar->minimum()) QCoreApplication::sendEvent(bar, event);
        return true;
      }
    return false;
  }
};

}  // namespace

void PlotStyle::wheelScrollsPage(QCustomPlot* plot) {
  static auto* filter = new WheelToPageFilter(QCoreApplication::instance());
  plot->installEventFilter(filter);
}

void PlotStyle::styleCategoryAxis(QCPAxis* axis) {
  axis->grid()->setVisible(false);
  axis->setTickLength(0, 0);
  axis->setSubTicks(false);
}

void PlotStyle::styleLegendRow(QCustomPlot* plot, const QFont& base) {
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setBrush(Qt::NoBrush);
  QFont legend_font = base;
  legend_font.setPointSizeF(8);
  plot->legend->setFont(legend_font);
  plot->legend->setIconSize(14, 10);
  plot->legend->setMargins(QMargins(4, 2, 4, 0));
}

void PlotStyle::styleAxis(QCPAxis* a, const QFont& base) {
  QFont tick = base;
  tick.setPointSizeF(8);
  const QPen axis_pen(QColor(0xB0, 0xB5, 0xBC));
  a->setTickLabelFont(tick);
  a->setLabelFont(tick);
  a->setBasePen(axis_pen);
  a->setTickPen(axis_pen);
  a->setSubTickPen(axis_pen);
  a->grid()->setPen(QPen(Palette::grid(Theme::Light), 1, Qt::DotLine));
}

void PlotStyle::styleAxes(QCustomPlot* plot) {
  for (QCPAxis* a : {plot->xAxis, plot->yAxis}) styleAxis(a, plot->font());
  plot->setBackground(Palette::background());
}

QString PlotStyle::wrappedText(const QString& text, int chars) {
  QStringList lines;
  QString line;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if (!line.isEmpty() && line.size() + 1 + word.size() > chars) {
      lines << line;
      line.clear();
    }
    line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
  }
  if (!line.isEmpty()) lines << line;
  return lines.join(QLatin1Char('\n'));
}

QString PlotStyle::foldedRanksTick(const std::vector<int>& ranks, int first) {
  return QObject::tr("ranks %1:\nsame as rank %2").arg(QString::fromStdString(rankRangesText(ranks))).arg(first);
}

namespace {

// One colour of one object: in Dark, remember the light colour the view set
// (a property on the object) and show its themed version; in Light, put the
// remembered colour back. A view that sets a new light colour later is seen
// as a colour that is not the themed version of the remembered one.
template <class Get, class Set>
void follow(QObject* o, const char* key, Get get, Set set) {
  const QColor now = get();
  const QVariant kept = o->property(key);
  if (Palette::theme() == Theme::Light) {
    if (kept.isValid()) {
      if (now == Palette::themed(kept.value<QColor>(), Theme::Dark)) set(kept.value<QColor>());
      o->setProperty(key, QVariant());
    }
    return;
  }
  QColor light = kept.isValid() ? kept.value<QColor>() : now;
  if (kept.isValid() && now != Palette::themed(light, Theme::Dark)) light = now;  // the view changed it
  o->setProperty(key, light);
  const QColor shown = Palette::themed(light, Theme::Dark);
  if (shown != now) set(shown);
}

void followPen(QObject* o, const char* key, const std::function<QPen()>& get, const std::function<void(const QPen&)>& set) {
  follow(o, key, [&] { return get().color(); }, [&](const QColor& c) {
    QPen p = get();
    p.setColor(c);
    set(p);
  });
}

void followBrush(QObject* o, const char* key, const std::function<QBrush()>& get,
                 const std::function<void(const QBrush&)>& set) {
  if (get().style() == Qt::NoBrush) return;
  follow(o, key, [&] { return get().color(); }, [&](const QColor& c) {
    QBrush b = get();
    b.setColor(c);
    set(b);
  });
}

}  // namespace

QLabel* PlotStyle::emptyMessage(QCustomPlot* plot, const QString& text) {
  auto* label = new QLabel(text, plot);
  label->setAlignment(Qt::AlignCenter);
  label->setWordWrap(true);
  setTone(label, Tone::Muted);
  label->setAttribute(Qt::WA_TransparentForMouseEvents);
  auto* overlay = new QVBoxLayout(plot);
  overlay->addWidget(label);
  return label;
}

void PlotStyle::followTheme(QCustomPlot* plot) {
  QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { applyTheme(plot); });
  applyTheme(plot);
}

void PlotStyle::applyTheme(QCustomPlot* plot) {
  plot->setBackground(Palette::background());
  for (QCPAxisRect* rect : plot->axisRects()) {
    for (QCPAxis* a : rect->axes()) {
      followPen(a, "ssBasePen", [a] { return a->basePen(); }, [a](const QPen& p) { a->setBasePen(p); });
      followPen(a, "ssTickPen", [a] { return a->tickPen(); }, [a](const QPen& p) { a->setTickPen(p); });
      followPen(a, "ssSubTickPen", [a] { return a->subTickPen(); }, [a](const QPen& p) { a->setSubTickPen(p); });
      follow(a, "ssLabel", [a] { return a->labelColor(); }, [a](const QColor& c) { a->setLabelColor(c); });
      follow(a, "ssTickLabel", [a] { return a->tickLabelColor(); }, [a](const QColor& c) { a->setTickLabelColor(c); });
      QCPGrid* g = a->grid();
      followPen(g, "ssGridPen", [g] { return g->pen(); }, [g](const QPen& p) { g->setPen(p); });
      followPen(g, "ssSubGridPen", [g] { return g->subGridPen(); }, [g](const QPen& p) { g->setSubGridPen(p); });
    }
  }
  if (QCPLegend* legend = plot->legend) {
    followBrush(legend, "ssBrush", [legend] { return legend->brush(); }, [legend](const QBrush& b) { legend->setBrush(b); });
    followPen(legend, "ssBorder", [legend] { return legend->borderPen(); }, [legend](const QPen& p) { legend->setBorderPen(p); });
    follow(legend, "ssText", [legend] { return legend->textColor(); }, [legend](const QColor& c) { legend->setTextColor(c); });
    for (int i = 0; i < legend->itemCount(); ++i) {
      QCPAbstractLegendItem* item = legend->item(i);
      if (!item) continue;  // an empty cell of the legend's grid
      // A new item takes the legend's (already themed) colour: its light
      // original is the legend's.
      if (!item->property("ssText").isValid() && Palette::theme() == Theme::Dark &&
          item->textColor() == legend->textColor())
        item->setProperty("ssText", legend->property("ssText"));
      follow(item, "ssText", [item] { return item->textColor(); }, [item](const QColor& c) { item->setTextColor(c); });
    }
  }
  for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
    if (auto* text = e ? qobject_cast<QCPTextElement*>(e) : nullptr)
      follow(text, "ssText", [text] { return text->textColor(); }, [text](const QColor& c) { text->setTextColor(c); });
  for (int i = 0; i < plot->itemCount(); ++i) {
    QCPAbstractItem* item = plot->item(i);
    if (auto* t = qobject_cast<QCPItemText*>(item)) {
      follow(t, "ssColor", [t] { return t->color(); }, [t](const QColor& c) { t->setColor(c); });
      followBrush(t, "ssBrush", [t] { return t->brush(); }, [t](const QBrush& b) { t->setBrush(b); });
      followPen(t, "ssPen", [t] { return t->pen(); }, [t](const QPen& p) { t->setPen(p); });
    } else if (auto* l = qobject_cast<QCPItemLine*>(item)) {
      followPen(l, "ssPen", [l] { return l->pen(); }, [l](const QPen& p) { l->setPen(p); });
    } else if (auto* sl = qobject_cast<QCPItemStraightLine*>(item)) {
      followPen(sl, "ssPen", [sl] { return sl->pen(); }, [sl](const QPen& p) { sl->setPen(p); });
    } else if (auto* r = qobject_cast<QCPItemRect*>(item)) {
      followPen(r, "ssPen", [r] { return r->pen(); }, [r](const QPen& p) { r->setPen(p); });
      followBrush(r, "ssBrush", [r] { return r->brush(); }, [r](const QBrush& b) { r->setBrush(b); });
    } else if (auto* tr = qobject_cast<QCPItemTracer*>(item)) {
      followPen(tr, "ssPen", [tr] { return tr->pen(); }, [tr](const QPen& p) { tr->setPen(p); });
      followBrush(tr, "ssBrush", [tr] { return tr->brush(); }, [tr](const QBrush& b) { tr->setBrush(b); });
    }
  }
  for (int i = 0; i < plot->plottableCount(); ++i) {
    QCPAbstractPlottable* p = plot->plottable(i);
    followPen(p, "ssPen", [p] { return p->pen(); }, [p](const QPen& pen) { p->setPen(pen); });
    followBrush(p, "ssBrush", [p] { return p->brush(); }, [p](const QBrush& b) { p->setBrush(b); });
  }
}

namespace {

// Entries, not cells: a wrapped legend's last row has empty cells.
int legendEntries(QCPLegend* legend) {
  int n = 0;
  for (int i = 0; i < legend->itemCount(); ++i) n += legend->item(i) ? 1 : 0;
  return n;
}

}  // namespace

void PlotStyle::fitLegend(QCustomPlot* plot) {
  QCPLegend* legend = plot->legend;
  const int items = legendEntries(legend);
  if (items == 0 || legend->layout() != plot->plotLayout()) return;
  // As many columns as fit across the plot (less the margins), each as wide
  // as its own widest entry: entries flow along a row rather than stacking
  // in columns of the widest one (a narrow timeline's legend took 6 rows).
  std::vector<double> widths;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i)) widths.push_back(double(item->minimumOuterSizeHint().width()));
  const QMargins m = legend->margins();
  const double spacing = legend->columnSpacing();
  const double room = plot->viewport().width() - m.left() - m.right() - 8;
  int columns = 1;
  for (int n = static_cast<int>(widths.size()); n > 1; --n) {
    double total = spacing * (n - 1);
    for (int c = 0; c < n; ++c) {
      double widest = 0;
      for (size_t i = static_cast<size_t>(c); i < widths.size(); i += static_cast<size_t>(n)) widest = std::max(widest, widths[i]);
      total += widest;
    }
    if (total <= room) {
      columns = n;
      break;
    }
  }
  columns = std::clamp(columns, 1, items);
  if (legend->wrap() == columns && legend->columnCount() == std::min(columns, items) &&
      legend->minimumOuterSizeHint().width() <= room + m.left() + m.right())
    return;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // re-flow the entries into rows
  // The grid's own measure decides (items' margins and spacing as it lays them out).
  while (columns > 1 && legend->minimumOuterSizeHint().width() > room + m.left() + m.right()) {
    legend->setWrap(--columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
  }
  // The layout just done measured the old legend: lay out again with the new one.
  QCPLayoutGrid* grid = plot->plotLayout();
  grid->update(QCPLayoutElement::upPreparation);
  grid->update(QCPLayoutElement::upMargins);
  grid->update(QCPLayoutElement::upLayout);
}

namespace {

// Greedy: words joined while the line fits `room` px.
QString wrapWords(const QString& text, const QFontMetricsF& metrics, double room) {
  QString out, line;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
    if (!line.isEmpty() && metrics.horizontalAdvance(longer) > room) {
      out += line + QLatin1Char('\n');
      line = word;
    } else {
      line = longer;
    }
  }
  return out + line;
}

// Rewraps every wrapped title of the plot; true when one changed.
bool fitTitles(QCustomPlot* plot) {
  bool changed = false;
  const double room = plot->viewport().width() - 16;
  for (QCPLayoutElement* e : plot->plotLayout()->elements(false)) {
    auto* title = qobject_cast<QCPTextElement*>(e);
    if (!title || !title->property("ssFullText").isValid()) continue;
    const QString wrapped = wrapWords(title->property("ssFullText").toString(), QFontMetricsF(title->font()), room);
    if (wrapped == title->text()) continue;
    title->setText(wrapped);
    changed = true;
  }
  return changed;
}

}  // namespace

void PlotStyle::setWrappedTitle(QCPTextElement* title, const QString& text) {
  QCustomPlot* plot = title->parentPlot();
  if (!plot->property("shardscopeFitsTitles").toBool()) {
    plot->setProperty("shardscopeFitsTitles", true);
    // After each layout, on screen and in a figure export: a changed title lays out again.
    QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] {
      if (!fitTitles(plot)) return;
      QCPLayoutGrid* grid = plot->plotLayout();
      grid->update(QCPLayoutElement::upPreparation);
      grid->update(QCPLayoutElement::upMargins);
      grid->update(QCPLayoutElement::upLayout);
    });
  }
  title->setProperty("ssFullText", text);
  title->setText(text);
  fitTitles(plot);
}

void PlotStyle::updateLegendRow(QCustomPlot* plot, bool top) {
  QCPLegend* legend = plot->legend;
  QCPLayoutGrid* grid = plot->plotLayout();
  if (!plot->property("shardscopeFitsLegend").toBool()) {
    plot->setProperty("shardscopeFitsLegend", true);
    // After each layout, on screen and in a figure export (toPainter lays out at the figure's size).
    QObject::connect(plot, &QCustomPlot::afterLayout, plot, [plot] { fitLegend(plot); });
  }
  const bool want = legendEntries(legend) > 0;
  const bool in_grid = legend->layout() == grid;
  if (want == in_grid) return;
  if (want) {
    plot->axisRect()->insetLayout()->take(legend);
    if (top) {
      grid->insertRow(0);
      grid->addElement(0, 0, legend);
      grid->setRowStretchFactor(0, 0.001);
    } else {
      const int row = grid->rowCount();
      grid->addElement(row, 0, legend);
      grid->setRowStretchFactor(row, 0.001);
    }
  } else {
    grid->take(legend);
    grid->simplify();
    plot->axisRect()->insetLayout()->addElement(legend, Qt::AlignTop | Qt::AlignRight);
  }
  legend->setVisible(want);
}

}  // namespace shardscope
