#include "user_guide.h"

#include <QHBoxLayout>
#include <QPushButton>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

namespace shardscope {

UserGuideDialog::UserGuideDialog(QWidget* parent) : QDialog(parent), m_browser(new QTextBrowser(this)) {
  setObjectName(QStringLiteral("userGuideDialog"));
  setWindowTitle(tr("ShardScope user guide"));
  m_browser->setObjectName(QStringLiteral("userGuideBrowser"));
  m_browser->setOpenExternalLinks(true);  // http(s) links go to the browser; qrc links stay here
  auto* back = new QPushButton(tr("Back"), this);
  auto* home = new QPushButton(tr("Contents"), this);
  auto* close = new QPushButton(tr("Close"), this);
  back->setEnabled(false);
  connect(back, &QPushButton::clicked, m_browser, &QTextBrowser::backward);
  connect(m_browser, &QTextBrowser::backwardAvailable, back, &QPushButton::setEnabled);
  connect(home, &QPushButton::clicked, this, [this] { showPage(QStringLiteral("index.md")); });
  connect(close, &QPushButton::clicked, this, &QDialog::close);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(back);
  buttons->addWidget(home);
  buttons->addStretch(1);
  buttons->addWidget(close);
  auto* box = new QVBoxLayout(this);
  box->addWidget(m_browser, 1);
  box->addLayout(buttons);
  resize(900, 700);
  showPage(QStringLiteral("index.md"));
}

void UserGuideDialog::showPage(const QString& page) {
  m_browser->setSource(QUrl(QStringLiteral("qrc:/docs/guide/") + page), QTextDocument::MarkdownResource);
}

}  // namespace shardscope
