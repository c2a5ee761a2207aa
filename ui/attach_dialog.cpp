#include "attach_dialog.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>

namespace shardscope {

bool askAttachRequest(QWidget* parent, AttachRequest* request) {
  QDialog dialog(parent);
  dialog.setWindowTitle(QObject::tr("Attach to run"));
  auto* form = new QFormLayout(&dialog);
  auto* intro = new QLabel(QObject::tr("Show a run served with <code>shardscope-cli run … --serve ADDR</code>, live and "
                                       "from its first step. Stop stops that run; Detach leaves it going."),
                           &dialog);
  intro->setWordWrap(true);
  form->addRow(intro);
  auto* address = new QLineEdit(request->address, &dialog);
  address->setObjectName(QStringLiteral("attachAddress"));
  address->setPlaceholderText(QStringLiteral("127.0.0.1:7070"));
  form->addRow(QObject::tr("&Address"), address);
  auto* key = new QLineEdit(request->server_key, &dialog);
  key->setObjectName(QStringLiteral("attachServerKey"));
  key->setPlaceholderText(QObject::tr("only for addresses other than 127.0.0.1"));
  key->setToolTip(QObject::tr("The serving machine's public key: `shardscope-cli keys` prints it there. That machine "
                              "must also authorize this one's key (`shardscope-cli keys --authorize KEY`)."));
  form->addRow(QObject::tr("Server &key"), key);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  buttons->button(QDialogButtonBox::Ok)->setText(QObject::tr("Attach"));
  form->addRow(buttons);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  dialog.resize(520, dialog.sizeHint().height());
  if (dialog.exec() != QDialog::Accepted) return false;
  request->address = address->text().trimmed();
  request->server_key = key->text().trimmed();
  return true;
}

}  // namespace shardscope
