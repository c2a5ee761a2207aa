// The "?" in a view's corner: the README's own paragraph on what the view shows
// and how to read it, compiled in as :/help/<page>.md (resources/help), so the
// app and the README cannot drift (tests/ui/test_guidance.cpp checks it).
#pragma once

#include <QString>

class QToolButton;
class QWidget;

namespace shardscope {

// The help text (Markdown) for a page name; "" when there is none.
QString pageHelpText(const QString& page);

// Adds a small "?" button (objectName "helpButton_<page>") to a dock's title
// bar, or floating in another host's top-right corner; a click shows
// pageHelpText(page) in a non-modal box.
QToolButton* addHelpButton(QWidget* host, const QString& page, const QString& title);

}  // namespace shardscope
