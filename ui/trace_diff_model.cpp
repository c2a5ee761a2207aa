#include "trace_diff_model.h"

#include <QBrush>
#include <QColor>

#include "kineto/report_format.h"
#include "kineto/trace_diff.h"

namespace shardscope {

TraceDiffModel::TraceDiffModel(QObject* parent) : QAbstractTableModel(parent) {}
TraceDiffModel::~TraceDiffModel() = default;

void TraceDiffModel::setDiff(std::shared_ptr<const kineto::TraceDiff> diff) {
  beginResetModel();
  m_diff = std::move(diff);
  endResetModel();
}

int TraceDiffModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_diff) return 0;
  return static_cast<int>(m_diff->kernels.size() + m_diff->ops.size());
}

int TraceDiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

const kineto::TraceDiffRow* TraceDiffModel::rowAt(int row, bool* kernel) const {
  if (!m_diff || row < 0) return nullptr;
  const size_t r = static_cast<size_t>(row);
  *kernel = r < m_diff->kernels.size();
  if (*kernel) return &m_diff->kernels[r];
  return r - m_diff->kernels.size() < m_diff->ops.size() ? &m_diff->ops[r - m_diff->kernels.size()] : nullptr;
}

QVariant TraceDiffModel::data(const QModelIndex& index, int role) const {
  bool kernel = false;
  const kineto::TraceDiffRow* r = index.isValid() ? rowAt(index.row(), &kernel) : nullptr;
  if (!r) return {};
  const auto us = [](double ns) { return QString::fromStdString(kineto::reportUs(ns, true)); };
  const auto num = [](double v, int decimals) { return QString::fromStdString(kineto::reportFixed(v, decimals, true)); };
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Kind: return kernel ? tr("kernel") : tr("op");
      case Name: return QString::fromStdString(r->name);
      case OnlyIn:
        return r->presence == kineto::TraceDiffPresence::ControlOnly ? tr("control")
               : r->presence == kineto::TraceDiffPresence::TestOnly  ? tr("test")
                                                                      : QString();
      case DeltaUs: return us(r->deltaNsPerStep());
      case ControlUs: return us(r->control_ns_per_step);
      case TestUs: return us(r->test_ns_per_step);
      case DeltaPct: return num(r->deltaPct(), 1);
      case ControlCount: return num(r->control_count_per_step, 3);
      case TestCount: return num(r->test_count_per_step, 3);
      case DeltaCount: return num(r->deltaCountPerStep(), 3);
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= DeltaUs)
    return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  // Slower in TEST: red; faster: green (the sign of core's delta, nothing recomputed).
  if (role == Qt::ForegroundRole && index.column() == DeltaUs && r->deltaNsPerStep() != 0)
    return QBrush(r->deltaNsPerStep() > 0 ? QColor(0xc0, 0x39, 0x2b) : QColor(0x1e, 0x84, 0x49));
  if (role == Qt::ToolTipRole && index.column() == Name) return QString::fromStdString(r->name);
  return {};
}

QVariant TraceDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Kind: return tr("kind");
    case Name: return tr("name");
    case OnlyIn: return tr("only in");
    case DeltaUs: return tr("Δ µs/step");
    case ControlUs: return tr("control µs/step");
    case TestUs: return tr("test µs/step");
    case DeltaPct: return tr("Δ %");
    case ControlCount: return tr("control n/step");
    case TestCount: return tr("test n/step");
    case DeltaCount: return tr("Δ n/step");
    default: return {};
  }
}

}  // namespace shardscope
