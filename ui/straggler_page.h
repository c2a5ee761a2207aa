// The "stragglers" page: the straggler view (straggler_view.h) over the
// Inspection's run, filled when an imported PyTorch job is shown (its
// collectives matched across ranks at import), cleared for anything else.
#pragma once

#include "view_pages.h"

namespace shardscope {

class StragglerView;

class StragglerPage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(StragglerPage)
 public:
  StragglerPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("stragglers"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  StragglerView* view() const { return m_view; }

 private:
  void showRun();
  StragglerView* m_view;
};

}  // namespace shardscope
