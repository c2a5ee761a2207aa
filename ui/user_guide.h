// Help > User guide: docs/guide rendered from the Markdown compiled into the
// application (:/docs/guide), so the installed app shows the guide of its own
// version; links between the pages and to docs/*.md work, web links open outside.
#pragma once

#include <QDialog>

class QTextBrowser;

namespace shardscope {

class UserGuideDialog : public QDialog {
  Q_OBJECT
 public:
  explicit UserGuideDialog(QWidget* parent = nullptr);
  QTextBrowser* browser() const { return m_browser; }
  // Shows a page of the guide ("index.md", "views.md#timeline").
  void showPage(const QString& page);

 private:
  QTextBrowser* m_browser;
};

}  // namespace shardscope
