#include "off_thread.h"

#include <QApplication>
#include <QEventLoop>
#include <QMetaObject>
#include <QPointer>
#include <QProgressDialog>
#include <memory>
#include <thread>

namespace shardscope {

bool runOffUiThread(QWidget* parent, const QString& title, const QString& label, const QString& object_name,
                    const OffThreadWork& work) {
  // Shared with the dialog's Cancel slot, which may outlive this call's stack only until the dialog is deleted.
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  QEventLoop loop;
  QPointer<QProgressDialog> dialog;
  if (parent) {
    dialog = new QProgressDialog(label, QObject::tr("Cancel"), 0, 0, parent);
    dialog->setObjectName(object_name);
    dialog->setWindowTitle(title);
    dialog->setMinimumDuration(300);
    dialog->setWindowModality(Qt::WindowModal);
    QObject::connect(dialog, &QProgressDialog::canceled, dialog, [cancel] { *cancel = true; });
  }
  const QPointer<QProgressDialog> target = dialog;
  const OffThreadProgress progress = [target](const QString& text) {
    QMetaObject::invokeMethod(qApp, [target, text] {
      if (target) target->setLabelText(text);
    }, Qt::QueuedConnection);
  };
  std::thread worker([&work, cancel, &progress, &loop] {
    work(*cancel, progress);
    QMetaObject::invokeMethod(&loop, "quit", Qt::QueuedConnection);
  });
  loop.exec();
  worker.join();
  delete dialog;
  return !cancel->load();
}

}  // namespace shardscope
