// The FSDP units page (zero3, fsdp, hsdp): a unit × rank grid coloured by each
// unit's state at the shared cursor time (sharded, gathering, gathered,
// computing, reducing, freed). Scrubbing the timeline cursor, the slider or
// Play animates a step. Without a cursor it shows the middle unit's forward
// in the last step, so a figure always has something to say.
#pragma once

#include <QFont>
#include <QSizeF>
#include <QWidget>
#include <optional>
#include <vector>

#include "inspect/unit_states.h"

class QComboBox;
class QCustomPlot;
class QCPAxisTickerText;
class QCPTextElement;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;

namespace shardscope {

class EventStore;
class UnitGridPlottable;

class UnitsView : public QWidget {
  Q_OBJECT
 public:
  explicit UnitsView(const EventStore* store, QWidget* parent = nullptr);

  // New events: rebuilt at most ~4×/s while live (immediately if now is true).
  void refresh(bool now = false);
  void setCursorTime(std::optional<int64_t> ns);

  const UnitStates& states() const { return m_states; }
  // The time the grid shows: the cursor, or the default moment without one.
  int64_t shownTime() const { return m_time; }
  // The state drawn in a cell (as of the last update); unit: the row (the
  // unit's index in states(), its id for every run's own units).
  UnitState cellState(int rank, int unit) const;
  QString cellTooltip(int rank, int unit) const;
  QString infoText() const;
  QCustomPlot* plot() const { return m_plot; }
  // Rows of units drawn (0 with the empty message: no units, or an imported trace).
  int drawnUnitRows() const;
  // The message shown instead of the grid ("" while the grid shows).
  QString emptyText() const;
  QString figureTitle() const;
  // The first of fonts in which every state's name fits a cell of this size
  // (px), or none: then no cell is labelled and the legend names the colours.
  static std::optional<QFont> cellLabelFont(const std::vector<QFont>& fonts, QSizeF cell);
  void play();  // animates the shown step from its start
  bool playing() const;

 signals:
  // The user scrubbed or played: move the shared cursor here.
  void cursorRequested(qint64 ns);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();
  void updateGrid();
  void updateSlider();
  void stepSpans();
  int stepAt(int64_t t) const;  // index into m_steps, -1 between steps
  int64_t defaultTime() const;

  const EventStore* m_store;
  UnitStates m_states;
  QTimer* m_throttle;
  QTimer* m_player;
  QPushButton* m_play;
  QSlider* m_slider;
  QLabel* m_timeLabel;
  QLabel* m_empty;
  QCustomPlot* m_plot;
  UnitGridPlottable* m_grid = nullptr;
  QCPTextElement* m_info = nullptr;
  QSharedPointer<QCPAxisTickerText> m_unitTicker;
  QSharedPointer<QCPAxisTickerText> m_rankTicker;
  struct StepSpan {
    int step;
    int64_t begin, end;
    bool open;  // no step_end yet (running, or stopped at a gate): it holds every later time
  };
  std::vector<StepSpan> m_steps;                     // rank 0's steps [step_begin, step_end], in order
  std::vector<UnitState> m_cells;                    // [unit * ranks + rank] at m_time
  std::optional<int64_t> m_cursor;
  int64_t m_time = 0;
  bool m_scrubbing = false;
};

}  // namespace shardscope
