// Figures of any view: PNG, SVG or PDF (by the file's suffix) at a chosen
// size in the light teaching theme (white, large fonts, legend, a title and a
// line describing the run). Plots are themed only while they are drawn into
// the file and restored afterwards. A PNG depends only on the plots' content
// and the size, so the same modeled run gives a byte-identical file.
#pragma once

#include <QList>
#include <QString>

class QCustomPlot;

namespace shardscope {

class EventStore;
struct RunConfig;

class FigureExport {
 public:
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
  // An imported PyTorch job's line: "fsdp_job · PyTorch profiler (Kineto) · 4 ranks · ProfilerSteps #10–12 · profiler clock".
  static QString importedLine(const EventStore& store);
};

}  // namespace shardscope
