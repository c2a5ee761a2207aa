// The line above the timeline: a run's error (red, plain text), or where a
// paused run stopped and what rank 0 holds there (blue, rich text).
#pragma once

#include <QLabel>
#include <array>
#include <cstdint>

#include "engine_bridge.h"

namespace shardscope {

class EventStore;

class RunBanner : public QLabel {
  Q_OBJECT
 public:
  explicit RunBanner(QWidget* parent = nullptr);

  // Hidden when text is empty.
  void showMessage(const QString& text, bool error);
  // rank0: rank 0's bytes per category at the stop; granularity: what F10 steps by.
  void showGateStop(const EngineBridge::GateStop& stop, const EventStore& store,
                    const std::array<int64_t, kCategoryCount>& rank0, StepMode granularity);
  // A gate stop was released: its description goes.
  void gateReleased();
  // The config was edited: a run's error no longer describes what Run would do.
  void clearError();
  QString shownText() const { return isHidden() ? QString() : text(); }

 private:
  bool m_isGate = false;   // the banner describes the current stop
  bool m_isError = false;  // it shows a run's error
};

}  // namespace shardscope
