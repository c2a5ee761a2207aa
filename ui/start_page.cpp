#include "start_page.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <algorithm>
#include <QVBoxLayout>

#include "preset.h"
#include "theme.h"

namespace shardscope {

StartPage::StartPage(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("startPage"));
  setAutoFillBackground(true);  // covers the docks it is laid over
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  outer->addWidget(scroll);

  // A centred column, at most 1100 px wide (scaled with the font), so lines stay readable on a wide screen.
  auto* page = new QWidget(scroll);
  auto* centre = new QHBoxLayout(page);
  auto* column = new QWidget(page);
  centre->addStretch(1);
  centre->addWidget(column, 100);
  centre->addStretch(1);
  scroll->setWidget(page);

  m_column = column;
  m_baseFont = column->font();
  auto* box = new QVBoxLayout(column);
  box->setContentsMargins(24, 16, 24, 16);
  box->setSpacing(10);
  box->addStretch(1);  // the lessons sit a little above the middle of a tall screen
  m_heading = new QLabel(tr("Lessons"), column);
  box->addWidget(m_heading);
  auto* intro = new QLabel(tr("Each lesson runs real training steps and shows, measured, what the formulas and the ZeRO "
                              "paper predict. Take them in order, or close this page to set up your own experiment. "
                              "File → Lessons brings it back."),
                           column);
  intro->setWordWrap(true);
  box->addWidget(intro);
  box->addSpacing(6);

  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(16);
  grid->setVerticalSpacing(8);
  grid->setColumnStretch(1, 1);
  int row = 0;
  for (const Preset& preset : builtinPresets()) {
    m_lessons << preset.name;
    auto* number = new QLabel(QString::number(row + 1), column);
    number->setAlignment(Qt::AlignRight | Qt::AlignTop);
    setTone(number, Tone::Note);
    // The question leads (what the lesson answers); the title and the preset's name follow, smaller.
    auto* text = new QLabel(column);
    text->setObjectName(QStringLiteral("lessonText_") + preset.name);
    text->setWordWrap(true);
    text->setToolTip(preset.text);
    m_rows.push_back({number, text, preset.question.isEmpty() ? preset.title : preset.question,
                      preset.title + QStringLiteral(" · ") + preset.name});
    auto* run = new QPushButton(tr("Run"), column);
    run->setObjectName(QStringLiteral("lessonRun_") + preset.name);
    run->setToolTip(tr("Run the %1 preset (%n run(s)) and show its %2 view", nullptr, static_cast<int>(preset.runs.size()))
                        .arg(preset.name, preset.view));
    connect(run, &QPushButton::clicked, this, [this, name = preset.name] { emit runRequested(name); });
    grid->addWidget(number, row, 0);
    grid->addWidget(text, row, 1);
    grid->addWidget(run, row, 2, Qt::AlignVCenter);
    ++row;
  }
  box->addLayout(grid);

  auto* buttons = new QHBoxLayout;
  auto* guide = new QPushButton(tr("User guide"), column);
  guide->setObjectName(QStringLiteral("startGuideButton"));
  connect(guide, &QPushButton::clicked, this, &StartPage::guideRequested);
  auto* close = new QPushButton(tr("Set up an experiment"), column);
  close->setObjectName(QStringLiteral("startCloseButton"));
  close->setToolTip(tr("Close the lessons and use the Experiment panel (Esc)"));
  connect(close, &QPushButton::clicked, this, &StartPage::closeRequested);
  buttons->addWidget(guide);
  buttons->addStretch(1);
  buttons->addWidget(close);
  box->addSpacing(6);
  box->addLayout(buttons);
  box->addStretch(2);
  restyle();
}

void StartPage::restyle() {
  // 1.0 at 720 px high, up to 1.4 on a 1080p screen: read from the back of a room.
  const double scale = std::clamp(height() / 760.0, 1.0, 1.4);
  QFont font = m_baseFont;
  font.setPointSizeF(m_baseFont.pointSizeF() * scale);
  m_column->setFont(font);
  m_column->setMaximumWidth(static_cast<int>(1100 * scale));
  QFont heading = font;
  heading.setPointSizeF(font.pointSizeF() * 1.8);
  heading.setBold(true);
  m_heading->setFont(heading);
  QFont number = font;
  number.setPointSizeF(font.pointSizeF() * 1.3);
  number.setBold(true);
  // Secondary text: between the text and the background, still readable (about 4.5:1 on the light theme).
  const QColor ink = palette().color(QPalette::WindowText), paper = palette().color(QPalette::Window);
  const QColor muted = QColor::fromRgbF(0.6 * ink.redF() + 0.4 * paper.redF(), 0.6 * ink.greenF() + 0.4 * paper.greenF(),
                                        0.6 * ink.blueF() + 0.4 * paper.blueF());
  for (const Lesson& row : m_rows) {
    row.number->setFont(number);
    row.text->setText(QStringLiteral("<b>%1</b><br><span style=\"color: %2;\">%3</span>")
                          .arg(row.question.toHtmlEscaped(), muted.name(), row.detail.toHtmlEscaped()));
  }
  m_scale = scale;
}

void StartPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (std::clamp(height() / 760.0, 1.0, 1.4) != m_scale) restyle();
}

void StartPage::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange && m_column) restyle();  // the theme changed
}

void StartPage::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape) {
    emit closeRequested();
    return;
  }
  QWidget::keyPressEvent(event);
}

}  // namespace shardscope
