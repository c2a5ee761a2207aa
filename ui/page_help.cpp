#include "page_help.h"

#include <QAbstractButton>
#include <QDockWidget>
#include <QEvent>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QMessageBox>
#include <QToolButton>

namespace shardscope {

namespace {

// Keeps the button in its host's top-right corner, above the host's children.
class CornerKeeper : public QObject {
 public:
  CornerKeeper(QWidget* host, QToolButton* button) : QObject(button), m_host(host), m_button(button) {
    host->installEventFilter(this);
    place();
  }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (watched == m_host && (event->type() == QEvent::Resize || event->type() == QEvent::Show ||
                              event->type() == QEvent::LayoutRequest))
      place();
    return false;
  }

 private:
  void place() {
    // A dock: in its title bar, left of the float and close buttons. Else the
    // host's top-right corner, clear of a vertical scroll bar.
    if (qobject_cast<QDockWidget*>(m_host)) {
      const auto* floatButton = m_host->findChild<QAbstractButton*>(QStringLiteral("qt_dockwidget_floatbutton"));
      if (floatButton && floatButton != m_button) {
        const QRect r = floatButton->geometry();
        m_button->setGeometry(r.left() - r.height() - 4, r.top(), r.height() + 2, r.height());
        m_button->raise();
        return;
      }
    }
    const int side = m_button->sizeHint().height();
    m_button->setGeometry(m_host->width() - side - 20, 2, side, side);
    m_button->raise();
  }
  QWidget* m_host;
  QToolButton* m_button;
};

}  // namespace

QHash<QString, QString> helpSections(const QString& markdown) {
  static const QRegularExpression block(QStringLiteral("<!--\\s*help:\\s*([\\w-]+)\\s*-->(.*?)<!--\\s*/help\\s*-->"),
                                        QRegularExpression::DotMatchesEverythingOption);
  QHash<QString, QString> out;
  for (auto it = block.globalMatch(markdown); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    out.insert(m.captured(1), m.captured(2).trimmed());
  }
  return out;
}

QString pageHelpText(const QString& page) {
  // Read once: every guide page's help blocks.
  static const QHash<QString, QString> texts = [] {
    QHash<QString, QString> all;
    for (const QFileInfo& info : QDir(QStringLiteral(":/docs/guide")).entryInfoList({QStringLiteral("*.md")}, QDir::Files)) {
      QFile file(info.filePath());
      if (file.open(QIODevice::ReadOnly)) all.insert(helpSections(QString::fromUtf8(file.readAll())));
    }
    return all;
  }();
  return texts.value(page);
}

QToolButton* addHelpButton(QWidget* host, const QString& page, const QString& title) {
  auto* button = new QToolButton(host);
  button->setObjectName(QStringLiteral("helpButton_") + page);
  button->setText(QStringLiteral("?"));
  button->setAutoRaise(true);
  button->setToolTip(QObject::tr("What the %1 view shows and how to read it").arg(title));
  QObject::connect(button, &QToolButton::clicked, host, [host, page, title] {
    auto* box = new QMessageBox(QMessageBox::Information, title, pageHelpText(page), QMessageBox::Close, host);
    box->setObjectName(QStringLiteral("helpBox_") + page);
    box->setTextFormat(Qt::MarkdownText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  });
  new CornerKeeper(host, button);
  return button;
}

}  // namespace shardscope
