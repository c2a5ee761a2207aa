// Help > Keyboard shortcuts: every shortcut of the window's actions, read from
// the QActions themselves (so a new shortcut shows up without editing a list),
// grouped by the menu that holds them, then the keys the views handle
// themselves (the timeline's F, H, Z, Esc).
#pragma once

#include <QString>

class QMainWindow;
class QWidget;

namespace shardscope {

// The table as HTML: one section per menu (submenus as "Run ▸ Step by"), then
// actions with a shortcut that no menu holds, then the views' own keys.
QString shortcutsHtml(const QMainWindow* window);

// A non-modal dialog showing shortcutsHtml(window); objectName "shortcutsDialog".
void showShortcutsDialog(QMainWindow* window);

}  // namespace shardscope
