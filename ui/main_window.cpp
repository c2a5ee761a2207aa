#include "main_window.h"
namespace shardscope {
MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) { setWindowTitle("ShardScope"); }
}  // namespace shardscope
