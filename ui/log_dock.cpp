#include "log_dock.h"

#include <QColor>
#include <QFontDatabase>
#include <QMetaObject>
#include <QTextDocument>
#include <deque>
#include <mutex>
#include <string_view>
#include <utility>

#include "common/log.h"
#include <spdlog/sinks/base_sink.h>

namespace shardscope {

// Outside the anonymous namespace: LogDockSink (a named class) holds them,
// which GCC warns about when a unity batch includes this file.
struct LogLine {
  spdlog::level::level_enum level;
  QString text;
};

namespace {

// Hues that read on the light and the dark theme (Okabe–Ito vermillion and
// orange, a mid grey); info keeps the text colour.
QString levelColour(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
    case spdlog::level::err: return QStringLiteral("#D55E00");
    case spdlog::level::warn: return QStringLiteral("#E69F00");
    case spdlog::level::debug:
    case spdlog::level::trace: return QStringLiteral("#8C8C8C");
    default: return {};
  }
}

}  // namespace

class LogDockSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit LogDockSink(LogDock* dock) : m_dock(dock) {}

  // GUI thread: the lines queued since the last call.
  std::deque<LogLine> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(m_pending, {});
  }
  void detach() {
    std::lock_guard lock(mutex_);
    m_dock = nullptr;
  }

 protected:
  // Any thread, under the sink's mutex.
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::string_view text(buf.data(), buf.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    m_pending.push_back({msg.level, QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()))});
    if (m_pending.size() > static_cast<size_t>(LogDock::kMaxLines)) m_pending.pop_front();  // the GUI is behind
    // One queued call per batch; Qt drops it if the dock is gone by then.
    if (m_pending.size() == 1 && m_dock)
      QMetaObject::invokeMethod(m_dock, [dock = m_dock] { dock->drain(); }, Qt::QueuedConnection);
  }
  void flush_() override {}

 private:
  LogDock* m_dock;
  std::deque<LogLine> m_pending;
};

LogDock::LogDock(QWidget* parent) : QPlainTextEdit(parent), m_sink(std::make_shared<LogDockSink>(this)) {
  setObjectName(QStringLiteral("logView"));
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setMaximumBlockCount(kMaxLines);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setToolTip(tr("The run's log at the level set with --log-level (default info): setup, communicators, "
                "timeouts, errors and stops"));
  m_sink->set_pattern("%H:%M:%S.%e [%n] %l: %v");
  addLogSink(m_sink);
}

LogDock::~LogDock() {
  removeLogSink(m_sink);  // no rank thread calls it after this
  m_sink->detach();
}

int LogDock::lines() const { return document()->isEmpty() ? 0 : blockCount(); }

void LogDock::drain() {
  for (const LogLine& line : m_sink->take()) {
    const QString colour = levelColour(line.level);
    const QString text = line.text.toHtmlEscaped();
    appendHtml(colour.isEmpty() ? QStringLiteral("<span style=\"white-space:pre\">%1</span>").arg(text)
                                : QStringLiteral("<span style=\"white-space:pre; color:%1\">%2</span>").arg(colour, text));
  }
}

}  // namespace shardscope
