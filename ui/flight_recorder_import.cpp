#include "flight_recorder_import.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QObject>
#include <new>

namespace shardscope {

namespace {

// Sniffed, not parsed: a dump's first 64 KiB name its keys (a pickle's dict
// or a JSON object); a profiler trace or a memory snapshot names none of them.
bool isDumpFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QByteArray head = f.read(64 * 1024);
  const bool pickle = head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80;
  const bool json = head.trimmed().startsWith('{');
  if (!pickle && !json) return false;
  return head.contains("pg_config") || head.contains("collective_seq_id") || head.contains("profiling_name");
}

}  // namespace

bool isFlightRecorderInput(const QString& path) {
  const QFileInfo info(path);
  if (info.isDir()) {
    const QStringList files = QDir(path).entryList(QDir::Files | QDir::NoDotAndDotDot, QDir::Name);
    return !files.isEmpty() && isDumpFile(QDir(path).filePath(files.front()));
  }
  return info.isFile() && isDumpFile(path);
}

std::shared_ptr<const FlightRecorderSet> importFlightRecorder(const QStringList& inputs, QString* error) {
  auto set = std::make_shared<FlightRecorderSet>();
  set->inputs = inputs;
  std::vector<std::string> paths;
  for (const QString& in : inputs) paths.push_back(in.toStdString());
  try {
    set->dumps = postmortem::readFlightRecorderDumps(paths);
  } catch (const std::bad_alloc&) {
    if (error) *error = QObject::tr("%1: not enough memory to read these dumps").arg(inputs.join(QStringLiteral(", ")));
    return nullptr;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return nullptr;
  }
  if (set->dumps.empty()) {
    if (error) *error = QObject::tr("%1: no flight-recorder dumps").arg(inputs.join(QStringLiteral(", ")));
    return nullptr;
  }
  return set;
}

}  // namespace shardscope
