// The bucket firing page (ddp, zero1, zero2): one step, a row per bucket and
// rank (bucket-major, so one bucket's ranks sit together), time across. A
// marker when the bucket became ready, a bar for its all-reduce (ZeRO: its
// reduce-scatter, and the parameter all-gather after the update). Hovering a
// row lists the bucket's parameters. In a stopped run the bucket that never
// fired and the rank that never readied it are red, with the run's error.
#pragma once

#include <QWidget>
#include <optional>

#include "inspect/bucket_activity.h"

class QComboBox;
class QCustomPlot;
class QCPTextElement;
class QCPAxisTickerText;
class QLabel;
class QTimer;

namespace shardscope {

class EventStore;
class BucketPlottable;

class BucketsView : public QWidget {
  Q_OBJECT
 public:
  explicit BucketsView(const EventStore* store, QWidget* parent = nullptr);

  // New events: rebuilt at most ~4×/s while live (immediately if now is true).
  void refresh(bool now = false);
  void setCursorTime(std::optional<int64_t> ns);
  // The run's one error (EngineBridge's runFinished message); empty clears it.
  void setRunError(const QString& message);
  void setStep(int step);

  int shownStep() const { return m_step; }
  const BucketActivity& activity() const { return m_activity; }
  // What the shown step draws: ready markers and collective bars over all rows.
  int readyMarkerCount() const;
  int collectiveBarCount() const;
  // Drawn in red: the rank never readied the bucket (stopped runs only).
  bool neverReadyHighlighted(int rank, int bucket) const;
  // Drawn in red: the rank launched the bucket's collective and waits for a peer.
  bool stuckHighlighted(int rank, int bucket) const;
  QString bucketTooltip(int rank, int bucket) const;
  QString infoText() const;  // the line above the rows (red with the error)
  // Characters per line of that text: 0 follows the widget's width; a figure
  // sets its own while it is drawn.
  void setInfoWrap(int chars);
  QCustomPlot* plot() const { return m_plot; }
  QString figureTitle() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();
  void updateRows();
  void updateRowTicks(bool force);  // per-row labels when rows are tall enough, else per bucket
  void updateInfo();
  bool failed() const;

  const EventStore* m_store;
  BucketActivity m_activity;
  QTimer* m_throttle;
  QComboBox* m_stepCombo;
  QLabel* m_empty;
  QCustomPlot* m_plot;
  QCPTextElement* m_info = nullptr;
  BucketPlottable* m_rows = nullptr;
  QSharedPointer<QCPAxisTickerText> m_ticker;
  QString m_error;
  std::optional<int64_t> m_cursor;
  int m_step = -1;
  int m_infoChars = 0;
  bool m_rowLabels = true;  // the row axis labels each bucket × rank row (else each bucket)
  uint64_t m_generation = ~0ull;
  bool m_userStep = false;  // picked in the combo: the cursor no longer moves it
};

}  // namespace shardscope
