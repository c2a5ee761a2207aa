// The "ladder" page: the collective ladder (ladder_view.h) of opened
// flight-recorder dumps, or, for a ShardScope run on screen once it has ended,
// of the dumps its own collectives give (core/postmortem/fr_dump_writer.h:
// what `run --flight-recorder DIR` writes). Computed when first looked at.
#pragma once

#include <memory>

#include "view_pages.h"

class QObject;

namespace shardscope {

class LadderView;
struct FlightRecorderSet;

class LadderPage : public ViewPage {
  Q_DECLARE_TR_FUNCTIONS(LadderPage)
 public:
  LadderPage(Inspection& inspection, QWidget* parent);
  ~LadderPage() override;
  QString name() const override { return QStringLiteral("ladder"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  LadderView* view() const { return m_view; }

  // Opened dumps: shown until another run is shown.
  void setDumps(std::shared_ptr<const FlightRecorderSet> set);

 private:
  void runChanged();
  void ensure() const;  // the shown run's ladder, when it is still to be derived

  LadderView* m_view;
  QObject* m_watcher;  // derives the ladder when the view is first shown
  mutable bool m_stale = false;  // the shown run's ladder is still to be derived
  mutable bool m_tooMany = false;  // the shown run has more ranks than a derived ladder draws
  // A run's own ladder is derived through its dumps (one per rank, each naming
  // its groups' members): past this many ranks that costs more than a view may.
  static constexpr int kMaxDerivedRanks = 1024;
};

}  // namespace shardscope
