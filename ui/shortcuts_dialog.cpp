#include "shortcuts_dialog.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QSet>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace shardscope {

namespace {

QString menuTitle(const QString& text) { return QString(text).remove(QLatin1Char('&')); }

QString row(const QString& keys, const QString& what) {
  return QStringLiteral("<tr><td style=\"padding-right:18px\"><b>%1</b></td><td>%2</td></tr>")
      .arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
}

// One table for every section, so the key column lines up across menus.
QString heading(const QString& title) {
  return QStringLiteral("<tr><td colspan=\"2\" style=\"padding-top:10px\"><b><big>%1</big></b></td></tr>")
      .arg(title.toHtmlEscaped());
}

QString actionRow(const QAction* a) {
  QStringList keys;
  for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
  return row(keys.join(QStringLiteral(", ")), menuTitle(a->text()).remove(QStringLiteral("…")));
}

// One section per menu with shortcuts; submenus after their parent.
void addMenu(const QMenu* menu, const QString& path, QString* html, QSet<const QAction*>* listed) {
  QString rows;
  QList<const QMenu*> submenus;
  for (const QAction* a : menu->actions()) {
    if (a->menu()) {
      submenus << a->menu();
      continue;
    }
    if (a->isSeparator() || a->shortcut().isEmpty() || listed->contains(a)) continue;
    listed->insert(a);
    rows += actionRow(a);
  }
  if (!rows.isEmpty()) *html += heading(path) + rows;
  for (const QMenu* sub : submenus)
    addMenu(sub, path + QStringLiteral(" ▸ ") + menuTitle(sub->title()), html, listed);
}

}  // namespace

QString shortcutsHtml(const QMainWindow* window) {
  QString html;
  QSet<const QAction*> listed;
  for (const QAction* top : window->menuBar()->actions())
    if (const QMenu* menu = top->menu()) addMenu(menu, menuTitle(menu->title()), &html, &listed);
  QString others;
  for (const QAction* a : window->findChildren<QAction*>())
    if (!a->shortcut().isEmpty() && !listed.contains(a)) {
      listed.insert(a);
      others += actionRow(a);
    }
  if (!others.isEmpty()) html += heading(QObject::tr("Elsewhere in the window")) + others;
  // Keys a view reads itself while it has the focus (TimelineView::keyPressEvent).
  html += heading(QObject::tr("Timeline (click it first)")) +
          QStringLiteral("%1").arg(row(QObject::tr("F"), QObject::tr("zoom to fit (or double-click)")) +
                   row(QObject::tr("H"), QObject::tr("show or hide the CPU threads of a PyTorch trace")) +
                   row(QObject::tr("P"), QObject::tr("outline a PyTorch job's critical path (its shown rank's ops)")) +
                   row(QObject::tr("Z"), QObject::tr("zoom to the range selected with Shift+drag")) +
                   row(QObject::tr("Esc"), QObject::tr("clear the cursor, the selected op and the range")) +
                   row(QObject::tr("Wheel / drag"), QObject::tr("zoom time / pan")) +
                   row(QObject::tr("Shift+drag"), QObject::tr("select a time range")) +
                   row(QObject::tr("Click"), QObject::tr("set the shared cursor and select an op")));
  return QStringLiteral("<table>%1</table>").arg(html);
}

void showShortcutsDialog(QMainWindow* window) {
  auto* dialog = new QDialog(window);
  dialog->setObjectName(QStringLiteral("shortcutsDialog"));
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(QObject::tr("Keyboard shortcuts"));
  auto* box = new QVBoxLayout(dialog);
  auto* text = new QTextBrowser(dialog);
  text->setObjectName(QStringLiteral("shortcutsText"));
  text->setHtml(shortcutsHtml(window));
  box->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  box->addWidget(buttons);
  dialog->resize(520, 600);
  dialog->show();
}

}  // namespace shardscope
