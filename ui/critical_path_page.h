// The "critical-path" page: an imported PyTorch job's critical path
// (critical_path_view.h), filled when the job is shown, cleared for anything else.
#pragma once

#include "view_pages.h"

namespace shardscope {

class CriticalPathView;

class CriticalPathPage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(CriticalPathPage)
 public:
  CriticalPathPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("critical-path"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  CriticalPathView* view() const { return m_view; }

 private:
  CriticalPathView* m_view;
};

}  // namespace shardscope
