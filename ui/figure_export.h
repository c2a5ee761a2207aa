// Figures of any view: PNG, SVG or PDF (by the file's suffix) at a chosen
// size in the light teaching theme (white, large fonts, legend, a title and a
// line describing the run). Plots are themed only while they are drawn into
// the file and restored afterwards. A PNG depends only on the plots' content
// and the size, so the same modeled run gives a byte-identical file.
#pragma once

#include <QFont>
#include <QList>
#include <QString>

class QCustomPlot;

namespace shardscope {

class EventStore;
struct RunConfig;

// How a figure is drawn: for a page (the default) or a slide.
struct FigureOptions {
  // Presentation setting: at 1920 × 1080 no text under 18 px (scaled with the
  // figure's size), thicker lines and boxes, no cursor, a legend entry for
  // folded boxes.
  bool slide = false;
  // Timeline figures fold ranks identical to rank 0 into one band (4+ ranks).
  bool collapseRanks = true;
};

class FigureExport {
 public:
  // The options of the figures written while it lives (pages read them
  // through options() as they draw); nested scopes restore the outer one.
  class Using {
   public:
    explicit Using(const FigureOptions& options);
    ~Using();
    Using(const Using&) = delete;
    Using& operator=(const Using&) = delete;

   private:
    FigureOptions m_outer;
  };
  static const FigureOptions& options();

  // The font family figures name (SVG) and embed (PDF): a real family
  // ("DejaVu Sans" where installed), never a generic alias such as "Sans".
  static QString fontFamily();
  // Text a plottable paints itself (box labels): `pt` on screen; in a figure
  // being written, the figure's family at the figure's size (a slide's minimum).
  static QFont paintFont(const QFont& base, double pt);
  // Line and box-outline widths: 1 on screen and in page figures, thicker in slides.
  static double lineScale();
  // While write() draws: the smallest text size in px (0 when not drawing).
  static double minTextPx();
  struct Panel {
    QCustomPlot* plot = nullptr;
    double weight = 1;  // share of the height below the title
  };

  // Writes the panels stacked under the title lines. false with a message
  // naming the path or the rule (size, suffix) on error.
  static bool write(const QString& path, const QString& title, const QString& subtitle, const QList<Panel>& panels,
                    int width, int height, QString* error);

  // Characters of body text (8.5 pt on screen) that fit across a figure of
  // this size in the teaching theme: for views that wrap text themselves.
  static int lineChars(int width, int height);

  // "zero3 · 8 ranks · gpt2-124m (meta) · batch 16 · unit 1 block · prefetch both · modeled h100-sxm":
  // the run's config from the store, with what only a live config knows
  // (backend, published model) when given.
  static QString configLine(const EventStore& store, const RunConfig* live = nullptr);
  // What a run's label adds to its config line: the label's " · " parts the
  // config does not already say ("" when it says them all), so a subtitle
  // never names "fsdp" or "prefetch both" twice.
  static QString labelBesides(const QString& label, const QString& config);
  // An imported PyTorch job's line: "fsdp_job · PyTorch profiler (Kineto) · 4 ranks · ProfilerSteps #10–12 · profiler clock".
  static QString importedLine(const EventStore& store);
};

}  // namespace shardscope
