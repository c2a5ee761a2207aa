#include "figure_export.h"

#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QImage>
#include <QPageSize>
#include <QPdfWriter>
#include <QSaveFile>
#include <QRegularExpression>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>
#include <tuple>
#include <qcustomplot.h>

#include "plot_style.h"
#include "palette.h"
#include "config/run_config.h"
#include "inspect/event_store.h"

namespace shardscope {

namespace {

constexpr int kDotsPerMeter96 = 3780;  // 96 dpi: point sizes map to the same pixels everywhere

// Pixel font sizes for the teaching theme, scaled with the figure so a
// poster and a slide read alike. Point sizes of the screen theme (7–9 pt)
// become ~1.75 px per point at 1600 × 900.
double themeScale(int width, int height) {
  return std::clamp(std::sqrt(static_cast<double>(width) * height / (1600.0 * 900.0)), 0.6, 3.0);
}

// A slide's smallest text: 18 px at 1920 × 1080, scaled with the figure.
double slideMinPx(int width, int height) {
  return 18.0 * std::sqrt(static_cast<double>(width) * height / (1920.0 * 1080.0));
}

FigureOptions g_options;  // FigureExport::Using

// What write() is drawing now (custom painters ask through paintFont / lineScale).
struct Drawing {
  bool active = false;
  bool slide = false;
  double scale = 1;   // themeScale
  double minPx = 0;   // the smallest text, px
} g_drawing;

// Pixel size in the figure of text set at `pt` on screen. A slide maps the
// smallest screen size (7 pt) to its minimum and keeps the others' ratios.
int figurePx(double pt) {
  if (g_drawing.slide)
    return static_cast<int>(std::ceil(std::max(g_drawing.minPx, g_drawing.minPx * pt / 7.0) - 1e-6));
  return std::max(9, static_cast<int>(std::lround(pt * 1.75 * g_drawing.scale)));
}

QFont themed(const QFont& f) {
  QFont out = f;
  out.setFamily(FigureExport::fontFamily());
  const double pt = f.pointSizeF() > 0 ? f.pointSizeF() : f.pixelSize() / 1.33;
  out.setPixelSize(figurePx(pt));
  return out;
}

QPen thicker(QPen pen, double by) {
  pen.setWidthF(std::max(pen.widthF(), 1.0) * by);
  return pen;
}

// Saves every font and size the theme touches, applies the theme, restores on destruction.
class ThemeGuard {
 public:
  ThemeGuard(QCustomPlot* plot, double scale) : m_plot(plot) {
    const double lines = FigureExport::lineScale();
    for (QCPAxisRect* rect : plot->axisRects()) {
      for (QCPAxis* axis : rect->axes()) {
        m_axes.push_back({axis, axis->tickLabelFont(), axis->labelFont(), axis->basePen(), axis->tickPen()});
        axis->setTickLabelFont(themed(axis->tickLabelFont()));
        axis->setLabelFont(themed(axis->labelFont()));
        if (lines > 1) {
          axis->setBasePen(thicker(axis->basePen(), lines));
          axis->setTickPen(thicker(axis->tickPen(), lines));
        }
      }
    }
    QCPLegend* legend = plot->legend;
    m_legendFont = legend->font();
    m_legendIcon = legend->iconSize();
    m_legendMax = legend->maximumSize();
    for (int i = 0; i < legend->itemCount(); ++i)
      if (QCPAbstractLegendItem* item = legend->item(i)) m_legendItems.push_back({item, item->font()});
    const QFont lf = themed(legend->font());
    legend->setFont(lf);
    for (auto& [item, font] : m_legendItems) item->setFont(themed(font));
    // A slide's icons follow its text; a page's the figure's scale.
    const double icon = g_drawing.slide ? g_drawing.minPx / 11.0 : scale * 1.5;
    legend->setIconSize(QSize(static_cast<int>(m_legendIcon.width() * icon), static_cast<int>(m_legendIcon.height() * icon)));
    // A legend row capped for the screen would clip its wrapped rows of larger text.
    legend->setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX);
    for (int i = 0; i < plot->itemCount(); ++i) {
      if (auto* text = qobject_cast<QCPItemText*>(plot->item(i))) {
        m_texts.push_back({text, text->font()});
        text->setFont(themed(text->font()));
      }
    }
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true)) {
      if (auto* text = qobject_cast<QCPTextElement*>(e)) {
        m_elements.push_back({text, text->font()});
        text->setFont(themed(text->font()));
      }
    }
    if (lines > 1) {
      for (int i = 0; i < plot->plottableCount(); ++i) {
        QCPAbstractPlottable* p = plot->plottable(i);
        if (!qobject_cast<QCPGraph*>(p) && !qobject_cast<QCPBars*>(p)) continue;
        m_pens.push_back({p, p->pen()});
        if (p->pen().style() != Qt::NoPen) p->setPen(thicker(p->pen(), lines));
        if (auto* graph = qobject_cast<QCPGraph*>(p); graph && !graph->scatterStyle().isNone()) {
          m_scatters.push_back({graph, graph->scatterStyle()});
          QCPScatterStyle bigger = graph->scatterStyle();
          bigger.setSize(bigger.size() * lines);
          graph->setScatterStyle(bigger);
        }
      }
    }
  }
  ~ThemeGuard() {
    for (const AxisFonts& a : m_axes) {
      a.axis->setTickLabelFont(a.tick);
      a.axis->setLabelFont(a.label);
      a.axis->setBasePen(a.base);
      a.axis->setTickPen(a.tickPen);
    }
    m_plot->legend->setFont(m_legendFont);
    m_plot->legend->setIconSize(m_legendIcon);
    m_plot->legend->setMaximumSize(m_legendMax);
    for (auto& [item, font] : m_legendItems) item->setFont(font);
    for (auto& [text, font] : m_texts) text->setFont(font);
    for (auto& [text, font] : m_elements) text->setFont(font);
    for (auto& [p, pen] : m_pens) p->setPen(pen);
    for (auto& [graph, style] : m_scatters) graph->setScatterStyle(style);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
  }
  ThemeGuard(const ThemeGuard&) = delete;
  ThemeGuard& operator=(const ThemeGuard&) = delete;

 private:
  struct AxisFonts {
    QCPAxis* axis;
    QFont tick, label;
    QPen base, tickPen;
  };
  QCustomPlot* m_plot;
  std::vector<AxisFonts> m_axes;
  QFont m_legendFont;
  QSize m_legendIcon;
  QSize m_legendMax;
  std::vector<std::pair<QCPAbstractPlottable*, QPen>> m_pens;
  std::vector<std::pair<QCPGraph*, QCPScatterStyle>> m_scatters;
  std::vector<std::pair<QCPAbstractLegendItem*, QFont>> m_legendItems;
  std::vector<std::pair<QCPItemText*, QFont>> m_texts;
  std::vector<std::pair<QCPTextElement*, QFont>> m_elements;
};

// Title, subtitle, then the panels stacked by weight.
void paintFigure(QCPPainter* painter, const QString& title, const QString& subtitle,
                 const QList<FigureExport::Panel>& panels, int width, int height, double scale) {
  painter->fillRect(QRect(0, 0, width, height), Qt::white);
  int y = 0;
  const int margin = static_cast<int>(std::lround(14 * scale));
  if (!title.isEmpty() || !subtitle.isEmpty()) {
    y = static_cast<int>(std::lround(10 * scale));
    QFont tf(FigureExport::fontFamily());
    tf.setPixelSize(g_drawing.slide ? static_cast<int>(std::lround(g_drawing.minPx * 1.6))
                                    : std::max(12, static_cast<int>(std::lround(22 * scale))));
    tf.setBold(true);
    QFont sf(FigureExport::fontFamily());
    sf.setPixelSize(g_drawing.slide ? static_cast<int>(std::ceil(g_drawing.minPx * 1.15))
                                    : std::max(10, static_cast<int>(std::lround(15 * scale))));
    const int avail = width - 2 * margin;
    for (const auto& [text, font, color] : {std::tuple{title, tf, QColor(0x1A, 0x1A, 0x1A)},
                                            std::tuple{subtitle, sf, QColor(0x50, 0x50, 0x50)}}) {
      if (text.isEmpty()) continue;
      painter->setFont(font);
      painter->setPen(color);
      const QRect bound = painter->boundingRect(QRect(margin, y, avail, height), Qt::TextWordWrap | Qt::AlignLeft, text);
      painter->drawText(QRect(margin, y, avail, bound.height()), Qt::TextWordWrap | Qt::AlignLeft, text);
      y += bound.height() + static_cast<int>(std::lround(4 * scale));
    }
    y += static_cast<int>(std::lround(6 * scale));
  }
  double total = 0;
  for (const FigureExport::Panel& p : panels) total += std::max(0.0, p.weight);
  const int avail = std::max(1, height - y);
  int used = 0;
  for (int i = 0; i < panels.size(); ++i) {
    const FigureExport::Panel& p = panels[i];
    const int h = i + 1 == panels.size() ? avail - used
                                         : static_cast<int>(std::lround(avail * std::max(0.0, p.weight) / std::max(total, 1e-9)));
    if (h <= 0) continue;
    painter->save();
    painter->translate(0, y + used);
    painter->setClipRect(QRect(0, 0, width, h));
    {
      ThemeGuard theme(p.plot, scale);
      p.plot->toPainter(painter, width, h);
    }
    painter->restore();
    used += h;
  }
}

}  // namespace

bool FigureExport::write(const QString& path, const QString& title, const QString& subtitle,
                         const QList<Panel>& panels, int width, int height, QString* error) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (width < 16 || height < 16 || width > 20000 || height > 20000) {
    if (error) *error = QObject::tr("figure size must be 16..20000 px per side, got %1 × %2").arg(width).arg(height);
    return false;
  }
  if (suffix != QLatin1String("png") && suffix != QLatin1String("svg") && suffix != QLatin1String("pdf")) {
    if (error) *error = QObject::tr("unknown figure format '%1' for %2: use .png, .svg or .pdf").arg(suffix, path);
    return false;
  }
  if (panels.isEmpty()) {
    if (error) *error = QObject::tr("nothing to draw into %1").arg(path);
    return false;
  }
  const double scale = themeScale(width, height);
  // What custom painters (paintFont, lineScale) see while this figure draws.
  struct DrawingNow {
    Drawing outer = g_drawing;
    DrawingNow(double scale, int width, int height) {
      g_drawing = {true, g_options.slide, scale, g_options.slide ? slideMinPx(width, height) : 0.0};
    }
    ~DrawingNow() { g_drawing = outer; }
  } drawing_now(scale, width, height);
  // Figures are always light: switch the palette (and the plots' colours)
  // while drawing, and back afterwards.
  struct LightWhileDrawing {
    const QList<Panel>& panels;
    Theme shown = Palette::theme();
    explicit LightWhileDrawing(const QList<Panel>& p) : panels(p) {
      if (shown == Theme::Light) return;
      Palette::setTheme(Theme::Light);
      for (const Panel& panel : panels) PlotStyle::applyTheme(panel.plot);
    }
    ~LightWhileDrawing() {
      if (shown == Theme::Light) return;
      Palette::setTheme(shown);
      for (const Panel& panel : panels) {
        PlotStyle::applyTheme(panel.plot);
        panel.plot->replot(QCustomPlot::rpQueuedReplot);
      }
    }
  } light(panels);
  // Every format is drawn into memory and written through QSaveFile: the
  // final path gets the whole figure or keeps what it held (a full disk or
  // a file-size limit leaves no truncated figure behind).
  bool ok = false;
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  if (suffix == QLatin1String("png")) {
    QImage image(width, height, QImage::Format_RGB32);
    image.setDotsPerMeterX(kDotsPerMeter96);
    image.setDotsPerMeterY(kDotsPerMeter96);
    image.fill(Qt::white);
    QCPPainter painter;
    if (painter.begin(&image)) {
      paintFigure(&painter, title, subtitle, panels, width, height, scale);
      painter.end();
      ok = image.save(&buffer, "PNG");
    }
  } else if (suffix == QLatin1String("pdf")) {
    // Points at the same numbers as the pixels asked for (72 dpi).
    QPdfWriter writer(&buffer);
    writer.setCreator(QStringLiteral("ShardScope"));
    writer.setTitle(title.isEmpty() ? QStringLiteral("ShardScope figure") : title);
    writer.setPageSize(QPageSize(QSizeF(width, height), QPageSize::Point, QString(), QPageSize::ExactMatch));
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    writer.setResolution(72);
    QCPPainter painter;
    if (painter.begin(&writer)) {
      paintFigure(&painter, title, subtitle, panels, width, height, scale);
      ok = painter.end();
    }
  } else {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setResolution(96);  // fonts at the screen's size relative to the boxes
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle(title.isEmpty() ? QStringLiteral("ShardScope figure") : title);
    QCPPainter painter;
    ok = painter.begin(&svg);
    if (ok) {
      paintFigure(&painter, title, subtitle, panels, width, height, scale);
      ok = painter.end();
    }
    if (ok) {
      // QSvgGenerator states the size in mm; the figure was asked for in px.
      QByteArray data = buffer.data();
      static const QRegularExpression size_attrs(QStringLiteral("<svg width=\"[0-9.]+mm\" height=\"[0-9.]+mm\""));
      const QString head = QString::fromUtf8(data.left(512));
      const QRegularExpressionMatch m = size_attrs.match(head);
      if (m.hasMatch())
        data.replace(m.capturedStart(), m.capturedLength(),
                     QStringLiteral("<svg width=\"%1\" height=\"%2\"").arg(width).arg(height).toUtf8());
      buffer.buffer() = data;
    }
  }
  if (ok) {
    QSaveFile file(path);
    ok = file.open(QIODevice::WriteOnly) && file.write(buffer.buffer()) == buffer.buffer().size() && file.commit();
  }
  if (!ok && error) *error = QObject::tr("could not write %1 (check the folder exists and is writable)").arg(path);
  return ok;
}

FigureExport::Using::Using(const FigureOptions& options) : m_outer(g_options) { g_options = options; }
FigureExport::Using::~Using() { g_options = m_outer; }
const FigureOptions& FigureExport::options() { return g_options; }

QString FigureExport::fontFamily() {
  static const QString family = [] {
    for (const char* f : {"DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"})
      if (QFontDatabase::hasFamily(QString::fromLatin1(f))) return QString::fromLatin1(f);
    // What the system resolves the general font to: a real family, not an alias.
    return QFontInfo(QFontDatabase::systemFont(QFontDatabase::GeneralFont)).family();
  }();
  return family;
}

QFont FigureExport::paintFont(const QFont& base, double pt) {
  QFont f = base;
  if (!g_drawing.active) {
    f.setPointSizeF(pt);
    return f;
  }
  f.setFamily(fontFamily());
  if (g_drawing.slide)
    f.setPixelSize(figurePx(pt));
  else
    f.setPointSizeF(pt);  // a page figure keeps the screen's box labels
  return f;
}

double FigureExport::lineScale() { return g_drawing.slide ? std::max(1.0, 2.0 * g_drawing.minPx / 18.0) : 1.0; }

double FigureExport::minTextPx() { return g_drawing.slide ? g_drawing.minPx : 0.0; }

QString FigureExport::labelBesides(const QString& label, const QString& config) {
  // "fsdp · prefetch both" beside "fsdp · 8 ranks · … · prefetch both": nothing new.
  QStringList kept;
  for (const QString& part : label.split(QStringLiteral(" · "), Qt::SkipEmptyParts)) {
    const QString p = part.trimmed();
    const QRegularExpression said(QStringLiteral("(^|[\\s·(,])%1($|[\\s·),])").arg(QRegularExpression::escape(p)));
    if (!p.isEmpty() && !said.match(config).hasMatch()) kept << p;
  }
  return kept.join(QStringLiteral(" · "));
}

QString FigureExport::importedLine(const EventStore& store) {
  const ImportedSource& source = *store.meta().imported;
  QStringList parts;
  // The job: its folder when the ranks came as several files, else the file.
  QString where;
  for (const std::string& f : source.files)
    if (!f.empty()) {
      const QFileInfo info(QString::fromStdString(f));
      where = source.files.size() > 1 ? info.dir().dirName() : info.fileName();
      break;
    }
  if (!where.isEmpty()) parts << where;
  parts << QString::fromStdString(source.format)
        << QString::fromStdString(store.meta().ranksText());
  int first = INT_MAX, last = INT_MIN;
  for (int r = 0; r < store.rankCount(); ++r)
    for (const Event& e : store.events(r))
      if (e.kind == EventKind::StepBegin) {
        first = std::min(first, e.step);
        last = std::max(last, e.step);
      }
  if (first <= last) parts << (first == last ? QStringLiteral("ProfilerStep#%1").arg(first)
                                             : QStringLiteral("ProfilerSteps #%1–%2").arg(first).arg(last));
  parts << QStringLiteral("profiler clock");
  return parts.join(QStringLiteral(" · "));
}

int FigureExport::lineChars(int width, int height) {
  // 8.5 pt themed, and an average glyph a little over half the pixel size.
  const double px = g_options.slide ? std::max(slideMinPx(width, height), slideMinPx(width, height) * 8.5 / 7.0)
                                    : 8.5 * 1.75 * themeScale(width, height);
  return std::max(40, static_cast<int>((width - 40) / (px * 0.56)));
}

QString FigureExport::configLine(const EventStore& store, const RunConfig* live) {
  const RunTrace& meta = store.meta();
  if (meta.imported) return importedLine(store);
  if (meta.strategy.empty()) return {};
  const RunConfig* c = store.config();  // nullptr: a trace without a readable config
  QStringList parts;
  parts << QString::fromStdString(meta.strategy) + QStringLiteral(" · ") + QString::fromStdString(meta.ranksText());
  const std::optional<Strategy> strategy = store.strategy();
  if (strategy && isHybrid(*strategy))
    parts.last() += QStringLiteral(" (shard group %1)").arg(c ? c->shardGroupSize() : meta.ranks);
  QString model;
  if (live && !live->model.preset.empty()) {
    model = QString::fromStdString(live->model.preset);
  } else {
    model = QStringLiteral("%1 %2×%3")
                .arg(c ? QString::fromStdString(modelKindName(c->model.kind)) : QStringLiteral("model"))
                .arg(c ? c->model.layers : 0)
                .arg(c ? c->model.hidden : 0);
  }
  model += QStringLiteral(" (%1 M params)").arg(static_cast<double>(meta.params) * 1e-6, 0, 'f', meta.params < 10'000'000 ? 2 : 0);
  if (live && live->backend == Backend::Meta) model += QStringLiteral(", meta backend");
  parts << model;
  if (c && c->batch > 0) parts << QStringLiteral("batch %1").arg(c->batch);
  if (strategy && usesBuckets(*strategy)) {
    if (!meta.buckets.empty()) parts << QStringLiteral("%1 buckets").arg(meta.buckets.size());
  } else if (c && c->isSharded()) {
    const int k = c->unitBlocks();
    // Linear wrapping makes every Linear layer a unit, whatever --unit-blocks says.
    const QString units = c->wrapPolicy() == Wrap::Linear ? QStringLiteral("every Linear a unit")
                                                          : QStringLiteral("%1 block%2/unit").arg(k).arg(k == 1 ? "" : "s");
    parts << QStringLiteral("%1 · prefetch %2").arg(units, QString::fromStdString(prefetchName(c->prefetchMode())));
  }
  if (store.modeledClock())
    parts << QStringLiteral("modeled clock (%1)").arg(QString::fromStdString(c->profileName()));
  else
    parts << QStringLiteral("measured clock");
  return parts.join(QStringLiteral(" · "));
}

}  // namespace shardscope
