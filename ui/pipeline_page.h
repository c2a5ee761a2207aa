// The "pipeline" page: the pipeline schedule view (pipeline_view.h) over the
// Inspection's run; it says why it is empty for a run without pipeline stages.
#pragma once

#include "view_pages.h"

namespace shardscope {

class PipelineView;

class PipelinePage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(PipelinePage)
 public:
  PipelinePage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("pipeline"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  PipelineView* view() const { return m_view; }

 private:
  PipelineView* m_view;
};

}  // namespace shardscope
