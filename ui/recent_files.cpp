#include "recent_files.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace shardscope {

namespace {

const QString kKey = QStringLiteral("recent/files");

QString kindName(RecentFiles::Kind kind) {
  switch (kind) {
    case RecentFiles::Kind::Trace: return QStringLiteral("trace");
    case RecentFiles::Kind::Job: return QStringLiteral("job");
    case RecentFiles::Kind::Experiment: return QStringLiteral("experiment");
  }
  return {};
}

}  // namespace

RecentFiles::RecentFiles(QMenu* menu, Opener opener, QObject* parent)
    : QObject(parent), m_menu(menu), m_opener(std::move(opener)) {
  connect(m_menu, &QMenu::aboutToShow, this, &RecentFiles::rebuildMenu);
  rebuildMenu();
}

void RecentFiles::setPersist(bool persist) {
  m_persist = persist;
  rebuildMenu();
}

QList<RecentFiles::Entry> RecentFiles::entries() const {
  QList<Entry> out;
  const QStringList raw = m_persist ? QSettings().value(kKey).toStringList() : m_memory;
  for (const QString& line : raw) {
    const qsizetype colon = line.indexOf(QLatin1Char(':'));
    const QString kind = line.left(colon), path = line.mid(colon + 1);
    if (colon <= 0 || path.isEmpty()) continue;
    if (kind == QLatin1String("trace")) out.push_back({Kind::Trace, path});
    else if (kind == QLatin1String("job")) out.push_back({Kind::Job, path});
    else if (kind == QLatin1String("experiment")) out.push_back({Kind::Experiment, path});
  }
  return out;
}

void RecentFiles::store(const QList<Entry>& entries) {
  QStringList raw;
  for (const Entry& e : entries) raw << kindName(e.kind) + QLatin1Char(':') + e.path;
  if (m_persist) QSettings().setValue(kKey, raw);
  else m_memory = raw;
  rebuildMenu();
}

void RecentFiles::add(Kind kind, const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QList<Entry> list = entries();
  list.removeIf([&](const Entry& e) { return e.path == absolute; });
  list.prepend({kind, absolute});
  while (list.size() > kMax) list.removeLast();
  store(list);
}

QStringList RecentFiles::paths() const {
  QStringList out;
  for (const Entry& e : entries()) out << e.path;
  return out;
}

bool RecentFiles::open(int index) {
  QList<Entry> list = entries();
  if (index < 0 || index >= list.size()) return false;
  const Entry entry = list[index];
  if (!QFileInfo::exists(entry.path)) {
    list.removeAt(index);
    store(list);
    emit message(tr("%1 no longer exists: removed from Recent files").arg(QDir::toNativeSeparators(entry.path)));
    return false;
  }
  QString error;
  if (!m_opener(entry.kind, entry.path, &error)) {
    emit message(error);
    return false;
  }
  add(entry.kind, entry.path);  // to the front
  return true;
}

void RecentFiles::rebuildMenu() {
  m_menu->clear();
  const QList<Entry> list = entries();
  for (int i = 0; i < list.size(); ++i) {
    const QString what = list[i].kind == Kind::Experiment ? tr("experiment")
                         : list[i].kind == Kind::Job      ? tr("job folder")
                                                          : tr("trace");
    QAction* a = m_menu->addAction(tr("&%1 %2 (%3)").arg(i + 1).arg(QFileInfo(list[i].path).fileName(), what));
    a->setToolTip(QDir::toNativeSeparators(list[i].path));
    a->setStatusTip(QDir::toNativeSeparators(list[i].path));
    // Queued: open() rebuilds this menu, which deletes the action being triggered.
    connect(a, &QAction::triggered, this, [this, i] { open(i); }, Qt::QueuedConnection);
  }
  if (list.isEmpty()) m_menu->addAction(tr("(none yet)"))->setEnabled(false);
  else {
    m_menu->addSeparator();
    m_menu->addAction(tr("Clear the list"), this, [this] { store({}); });
  }
}

}  // namespace shardscope
