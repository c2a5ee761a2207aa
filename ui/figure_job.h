// The headless figure path (`shardscope --figure --preset NAME --view V --out
// FILE`, or `--figure --open TRACE|DIR ...` for a trace): runs a preset's runs in a window that is never shown on screen (the
// offscreen platform in the app), then writes one view's figure. On the
// modeled clock the same preset gives a byte-identical PNG every time.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

namespace shardscope {

struct FigureJob {
  QString preset;  // a built-in preset's name, or a path to a .json file
  QString open;    // instead of a preset: a trace, or a PyTorch profiler job (file or folder)
  QStringList more_open;  // opened with it: PyTorch memory snapshots, one per rank
  QString view;    // one of presetViews()
  QString out;     // .png, .svg or .pdf
  int width = 1600;
  int height = 900;
  std::optional<double> cursor_ms;  // the shared cursor for the figure (units, buckets, memory)
  // --runs: "all", "N" or "N,M,…" (from 1) picks the preset's runs to draw;
  // several are compared (timeline, memory, comm). Empty: the last run, or
  // the last one the view has something to draw for.
  QString runs;
  // --categories: the memory-ledger categories the memory view draws ("model-state,gathered"); empty: all.
  QString categories;
  bool slide = false;      // --slide: the presentation setting (FigureOptions::slide)
  bool all_ranks = false;  // --all-ranks: draw every rank, identical ones too
};

// The views that draw several runs compared.
QStringList compareViews();

// Runs the job in a nested event loop. Returns the process exit code: 0 the
// figure was written, 1 it could not be written, 2 bad input (preset, view,
// size, a config the preset cannot run, a view with nothing to draw for the
// preset's runs), 3 a run stopped that the preset did not expect to (the
// figure is still written when it can be). message: the line to print.
int runFigureJob(const FigureJob& job, QString* message);

}  // namespace shardscope
