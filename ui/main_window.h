#pragma once
#include <QMainWindow>
namespace shardscope {
class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
};
}  // namespace shardscope
