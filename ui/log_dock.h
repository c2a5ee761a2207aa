// The Log dock: the run's log (core/common/log.h) as read-only text, newest at
// the bottom, coloured by level and capped at kMaxLines. Its spdlog sink is
// called on rank threads; it queues the lines and hands them to the GUI
// thread in one queued call per batch.
#pragma once

#include <QPlainTextEdit>
#include <memory>

namespace shardscope {

class LogDockSink;

class LogDock : public QPlainTextEdit {
  Q_OBJECT

 public:
  static constexpr int kMaxLines = 5000;

  explicit LogDock(QWidget* parent = nullptr);
  ~LogDock() override;

  int lines() const;  // lines shown

 private:
  friend class LogDockSink;
  void drain();  // GUI thread: append what the sink queued

  std::shared_ptr<LogDockSink> m_sink;
};

}  // namespace shardscope
