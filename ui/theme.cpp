#include "theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QWidget>
#include <qcustomplot.h>

#include "plot_style.h"

namespace shardscope {

namespace {

// Fusion with dark roles: the widgets' side of the dark theme.
QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2B, 0x2E, 0x33), base(0x1F, 0x22, 0x26), text(0xE2, 0xE5, 0xE9), muted(0x7A, 0x7F, 0x87);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, window);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x8A, 0x90, 0x99));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x33, 0x37, 0x3D));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xFF, 0x4D, 0x7D));
  p.setColor(QPalette::Link, QColor(0x56, 0xB4, 0xE9));
  p.setColor(QPalette::Highlight, QColor(0x00, 0x72, 0xB2));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Light, QColor(0x42, 0x46, 0x4D));
  p.setColor(QPalette::Midlight, QColor(0x3A, 0x3E, 0x44));
  p.setColor(QPalette::Mid, QColor(0x4A, 0x4F, 0x57));
  p.setColor(QPalette::Dark, QColor(0x1A, 0x1C, 0x20));
  p.setColor(QPalette::Shadow, QColor(0x11, 0x11, 0x11));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, muted);
  return p;
}

}  // namespace

void setTone(QWidget* label, Tone tone) {
  label->setProperty("tone", tone == Tone::Note ? QStringLiteral("note") : QStringLiteral("muted"));
}

void applyTheme(Theme theme) {
  Palette::setTheme(theme);
  QApplication::setPalette(theme == Theme::Dark ? darkPalette() : QApplication::style()->standardPalette());
  qApp->setStyleSheet(QStringLiteral("QLabel[tone=\"note\"] { color: %1; } QLabel[tone=\"muted\"] { color: %2; }")
                          .arg(Palette::themed(QColor(0x44, 0x44, 0x44)).name(),
                               Palette::themed(QColor(0x77, 0x77, 0x77)).name()));
  for (QWidget* window : QApplication::topLevelWidgets())
    for (QCustomPlot* plot : window->findChildren<QCustomPlot*>()) {
      PlotStyle::applyTheme(plot);
      plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

}  // namespace shardscope
