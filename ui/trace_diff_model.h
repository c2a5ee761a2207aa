// The trace diff page's model: core's rows (kineto/trace_diff.h) as a table,
// kernels first, then ops, each in core's order (the biggest regression on
// top). Every figure is core's, per profiled step of one rank; the model only
// formats them (µs with three decimals, as `analyze --diff` prints them).
#pragma once

#include <QAbstractTableModel>
#include <memory>

namespace shardscope {

namespace kineto {
struct TraceDiff;
struct TraceDiffRow;
}  // namespace kineto

class TraceDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Name, OnlyIn, DeltaUs, ControlUs, TestUs, DeltaPct, ControlCount, TestCount, DeltaCount, ColumnCount };

  explicit TraceDiffModel(QObject* parent = nullptr);
  ~TraceDiffModel() override;

  void setDiff(std::shared_ptr<const kineto::TraceDiff> diff);  // nullptr: empty
  const kineto::TraceDiff* diff() const { return m_diff.get(); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const kineto::TraceDiffRow* rowAt(int row, bool* kernel) const;
  std::shared_ptr<const kineto::TraceDiff> m_diff;
};

}  // namespace shardscope
