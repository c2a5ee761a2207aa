// The first screen: the shipped lessons (the built-in presets, in teaching
// order), each with its question (the preset's own "question" field) and a Run
// button. The window lays it over its docks on first start and from
// File > Lessons; it only asks, the window runs the preset.
#pragma once

#include <QFont>
#include <QStringList>
#include <QWidget>
#include <vector>

class QLabel;

namespace shardscope {

class StartPage : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);

  // The presets listed, in the order shown.
  QStringList lessons() const { return m_lessons; }

 signals:
  void runRequested(const QString& preset);  // a lesson's Run
  void guideRequested();                     // "User guide"
  void closeRequested();                     // "Set up an experiment" or Esc

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  void restyle();  // fonts scaled to the page's height, colours from the palette

  struct Lesson {
    QLabel* number;
    QLabel* text;
    QString question, detail;
  };
  QStringList m_lessons;
  std::vector<Lesson> m_rows;
  QWidget* m_column = nullptr;
  QLabel* m_heading = nullptr;
  QFont m_baseFont;
  double m_scale = 0;
};

}  // namespace shardscope
