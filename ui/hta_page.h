// The "hta" page: Holistic Trace Analysis' tables for an imported PyTorch job
// (hta_view.h), registered like every page so it has a "?", a figure (the
// idle-time breakdown by rank and stream) and `--figure --view hta`.
#pragma once

#include "view_pages.h"

namespace shardscope {

class HtaView;

class HtaPage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(HtaPage)
 public:
  HtaPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("hta"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  HtaView* view() const { return m_view; }

 private:
  HtaView* m_view;
};

}  // namespace shardscope
