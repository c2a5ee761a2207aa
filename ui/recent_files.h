// File > Recent files: the last kMax traces, experiments and PyTorch job
// folders opened, newest first, kept in QSettings ("recent/files"). Reopening
// one that no longer exists removes it and says so (message()).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

class QMenu;

namespace shardscope {

class RecentFiles : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMax = 8;
  enum class Kind { Trace, Job, Experiment };
  // Opens a file of a kind; false with the error.
  using Opener = std::function<bool(Kind, const QString& path, QString* error)>;

  RecentFiles(QMenu* menu, Opener opener, QObject* parent);

  // Off: the list lives in memory only (tests, --screenshot).
  void setPersist(bool persist);
  void add(Kind kind, const QString& path);  // to the front; drops a repeat and the 9th
  QStringList paths() const;                 // newest first
  // Reopens entry `index`; a missing file is removed (false, message emitted).
  bool open(int index);
  QMenu* menu() const { return m_menu; }

 signals:
  void message(const QString& text);

 private:
  struct Entry {
    Kind kind;
    QString path;
  };
  QList<Entry> entries() const;
  void store(const QList<Entry>& entries);
  void rebuildMenu();

  QMenu* m_menu;
  Opener m_opener;
  bool m_persist = true;
  QStringList m_memory;  // when not persisting
};

}  // namespace shardscope
