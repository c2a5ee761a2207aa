// The window's six pages: each makes its view over the Inspection's store,
// subscribes it to the Inspection (refreshes, cursor, selection, the run on
// screen) and knows its figure and when it has nothing to draw.
#pragma once

#include <QCoreApplication>
#include <QElapsedTimer>

#include "page.h"

class QWidget;

namespace shardscope {

class BucketsView;
class CommView;
class Inspection;
class LossView;
class MemoryView;
class StepWalkthrough;
class TimelineView;
class UnitsView;

// A page whose view shows the Inspection's run.
class ViewPage : public Page {
  Q_DECLARE_TR_FUNCTIONS(ViewPage)
 public:
  QString unavailable() const override;  // "" or why there is no run at all

 protected:
  explicit ViewPage(Inspection& inspection) : m_inspection(inspection) {}
  Inspection& m_inspection;
};

class TimelinePage : public ViewPage {
 public:
  TimelinePage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("timeline"); }
  QString title() const override;
  QWidget* widget() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  TimelineView* view() const { return m_view; }

 private:
  TimelineView* m_view;
  bool m_settle = false;  // a finished run was just shown: stop following once it is drawn
};

class MemoryPage : public ViewPage {
 public:
  MemoryPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("memory"); }
  QString title() const override;
  QWidget* widget() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  MemoryView* view() const { return m_view; }

 private:
  MemoryView* m_view;
};

class BucketsPage : public ViewPage {
 public:
  BucketsPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("buckets"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  BucketsView* view() const { return m_view; }

 private:
  BucketsView* m_view;
};

class UnitsPage : public ViewPage {
 public:
  UnitsPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("units"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  UnitsView* view() const { return m_view; }

 private:
  UnitsView* m_view;
};

class LossPage : public ViewPage {
 public:
  LossPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("loss"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  LossView* view() const { return m_view; }

 private:
  bool metaBackend() const;
  LossView* m_view;
};

class CommPage : public ViewPage {
 public:
  CommPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("comm"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  CommView* view() const { return m_view; }

 private:
  CommView* m_view;
  QElapsedTimer m_liveClock;  // throttles rescans of a live run
};

// The step walkthrough has no figure: it only follows the refreshes and the cursor.
void followInspection(StepWalkthrough* walkthrough, Inspection& inspection);

}  // namespace shardscope
