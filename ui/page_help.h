// The "?" in a view's corner: the user guide's own paragraph on what the view
// shows and how to read it — the text between `<!-- help: PAGE -->` and
// `<!-- /help -->` in docs/guide/*.md, compiled in as :/docs/guide — so the app
// and the guide cannot drift (tests/ui/test_guidance.cpp checks it).
#pragma once

#include <QHash>
#include <QString>

class QToolButton;
class QWidget;

namespace shardscope {

// The help text (Markdown) for a page name; "" when there is none.
QString pageHelpText(const QString& page);

// The help paragraphs of one guide page's Markdown, by page name (the
// `<!-- help: PAGE -->` … `<!-- /help -->` blocks).
QHash<QString, QString> helpSections(const QString& markdown);

// Adds a small "?" button (objectName "helpButton_<page>") to a dock's title
// bar, or floating in another host's top-right corner; a click shows
// pageHelpText(page) in a non-modal box.
QToolButton* addHelpButton(QWidget* host, const QString& page, const QString& title);

}  // namespace shardscope
