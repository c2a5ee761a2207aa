// The window's six pages: each makes its view over the Inspection's store,
// subscribes it to the Inspection (refreshes, cursor, selection, the run on
// screen) and knows its figure and when it has nothing to draw.
#pragma once

#include <QCoreApplication>
#include <QElapsedTimer>

#include "page.h"

class QStackedWidget;
class QWidget;

namespace shardscope {

class BucketsView;
class CommView;
class CompareCommView;
class CompareMemoryView;
class CompareTimelineView;
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
  CompareTimelineView* compareView() const { return m_compare; }

 private:
  TimelineView* m_view;
  CompareTimelineView* m_compare;  // compare mode: a band per pinned run
  QStackedWidget* m_stack;
  bool m_settle = false;  // a finished run was just shown: stop following once it is drawn
  bool m_foldCopies = false;  // a run was just shown: fold its copies of rank 0 once it has ended
};

class MemoryPage : public ViewPage {
 public:
  MemoryPage(Inspection& inspection, QWidget* parent);
  QString name() const override { return QStringLiteral("memory"); }
  QString title() const override;
  QWidget* widget() const override;
  QString unavailable() const override;
  bool figure(const QString& path, int width, int height, const QString& subtitle, QString* error) override;
  MemoryView* view() const { return m_view; }
  CompareMemoryView* compareView() const { return m_compare; }

 private:
  MemoryView* m_view;
  CompareMemoryView* m_compare;  // compare mode: the runs' ledgers side by side
  QStackedWidget* m_stack;
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
  CompareCommView* compareView() const { return m_compare; }

 private:
  CommView* m_view;
  CompareCommView* m_compare;  // compare mode: the runs in columns
  QStackedWidget* m_stack;
  QElapsedTimer m_liveClock;  // throttles rescans of a live run
};

// The step walkthrough has no figure: it only follows the refreshes and the cursor.
void followInspection(StepWalkthrough* walkthrough, Inspection& inspection);

}  // namespace shardscope
