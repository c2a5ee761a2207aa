// The form's field kinds, one per settings type (setting_field.h).
#include "setting_field.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QSpinBox>
#include <algorithm>
#include <limits>

namespace shardscope {

namespace {

QString fieldTip(const Setting& row) {
  return QStringLiteral("%1: %2").arg(QString::fromLatin1(row.flag), QString::fromLatin1(row.help));
}

template <class W>
W* namedWidget(const Setting& row, QWidget* parent) {
  auto* w = new W(parent);
  w->setObjectName(QString::fromStdString(row.presetKey()));
  w->setToolTip(fieldTip(row));
  return w;
}

// Int and RngState: a spin box from the row's form minimum to a little above
// its valid range (the validator, not a silent clamp, says the rule).
class IntField : public SettingField {
 public:
  IntField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QSpinBox>(row, parent)) {
    box()->setRange(static_cast<int>(row.form.min), static_cast<int>(row.form.max));
    box()->setAccelerated(true);
    if (*row.form.suffix) box()->setSuffix(QObject::tr(row.form.suffix));
  }
  QString text() const override { return QString::number(box()->value()); }
  void setText(const QString& text) override {
    bool ok = false;
    const qlonglong v = text.toLongLong(&ok);
    if (ok) box()->setValue(static_cast<int>(std::clamp<qlonglong>(v, std::numeric_limits<int>::min(),
                                                                   std::numeric_limits<int>::max())));
  }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(box(), &QSpinBox::valueChanged, box(), edited);
  }

 private:
  QSpinBox* box() const { return static_cast<QSpinBox*>(widget()); }
};

class RealField : public SettingField {
 public:
  RealField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QDoubleSpinBox>(row, parent)) {
    box()->setRange(row.form.min, row.form.max);
    box()->setDecimals(row.form.decimals);
    box()->setSingleStep(row.form.step);
    if (*row.form.suffix) box()->setSuffix(QObject::tr(row.form.suffix));
  }
  // The shown value (rounded to the shown decimals), in the shortest text that parses back to it.
  QString text() const override { return QString::fromStdString(exactText(box()->value())); }
  void setText(const QString& text) override {
    bool ok = false;
    const double v = text.toDouble(&ok);
    if (ok) box()->setValue(v);
  }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(box(), &QDoubleSpinBox::valueChanged, box(), edited);
  }

 private:
  QDoubleSpinBox* box() const { return static_cast<QDoubleSpinBox*>(widget()); }
};

// Choice, and a Text row with suggestions: the names to pick from.
class ComboField : public SettingField {
 public:
  ComboField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QComboBox>(row, parent)) {
    if (row.choices)
      for (const std::string& name : row.choices()) box()->addItem(QString::fromStdString(name));
  }
  QString text() const override { return box()->currentText(); }
  void setText(const QString& text) override {
    if (const int i = box()->findText(text); i >= 0) box()->setCurrentIndex(i);
  }
  void setItems(const QStringList& items) override {
    const QString current = box()->currentText();
    box()->clear();
    box()->addItems(items);
    setText(current);
  }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(box(), &QComboBox::currentIndexChanged, box(), edited);
  }

 private:
  QComboBox* box() const { return static_cast<QComboBox*>(widget()); }
};

class TextField : public SettingField {
 public:
  TextField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QLineEdit>(row, parent)) {}
  QString text() const override { return edit()->text(); }
  void setText(const QString& text) override { edit()->setText(text); }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(edit(), &QLineEdit::textChanged, edit(), edited);
  }

 private:
  QLineEdit* edit() const { return static_cast<QLineEdit*>(widget()); }
};

// on|off: a check box labelled by the row ("true"/"false" from older saved settings read too).
class SwitchField : public SettingField {
 public:
  SwitchField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QCheckBox>(row, parent)) {
    check()->setText(QObject::tr(row.form.label));
  }
  QString text() const override { return check()->isChecked() ? QStringLiteral("on") : QStringLiteral("off"); }
  void setText(const QString& text) override {
    if (text == QLatin1String("on") || text == QLatin1String("true")) check()->setChecked(true);
    if (text == QLatin1String("off") || text == QLatin1String("false")) check()->setChecked(false);
  }
  void addTo(QFormLayout* form) override {
    m_form = form;
    form->addRow(widget());
  }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(check(), &QCheckBox::toggled, check(), edited);
  }

 private:
  QCheckBox* check() const { return static_cast<QCheckBox*>(widget()); }
};

// R:L: a check box (given or not) and, under it while checked, the two numbers.
class RankBlockField : public SettingField {
 public:
  RankBlockField(const Setting& row, QWidget* parent) : SettingField(row, namedWidget<QCheckBox>(row, parent)) {
    check()->setText(QObject::tr(row.form.label));
    const QString key = QString::fromStdString(row.presetKey());
    m_rank = new QSpinBox(parent);
    m_rank->setObjectName(key + QStringLiteral("-rank"));
    m_rank->setRange(0, 1024);
    m_rank->setToolTip(QObject::tr("rank that takes the branch"));
    m_block = new QSpinBox(parent);
    m_block->setObjectName(key + QStringLiteral("-block"));
    m_block->setRange(0, 4096);
    m_block->setToolTip(QObject::tr("block it skips"));
  }
  QString text() const override {
    return check()->isChecked() ? QStringLiteral("%1:%2").arg(m_rank->value()).arg(m_block->value()) : QString();
  }
  void setText(const QString& text) override {
    const QStringList parts = text.split(QLatin1Char(':'));
    bool rank_ok = false, block_ok = false;
    const int rank = parts.size() == 2 ? parts[0].toInt(&rank_ok) : 0;
    const int block = parts.size() == 2 ? parts[1].toInt(&block_ok) : 0;
    if (rank_ok && block_ok) {
      m_rank->setValue(rank);
      m_block->setValue(block);
      check()->setChecked(true);
    } else if (text.isEmpty() || text == QLatin1String("false")) {
      check()->setChecked(false);
    } else if (text == QLatin1String("true")) {
      check()->setChecked(true);
    }
  }
  void addTo(QFormLayout* form) override {
    m_form = form;
    form->addRow(widget());
    form->addRow(QObject::tr("rank"), m_rank);
    form->addRow(QObject::tr("skips block"), m_block);
  }
  void setShown(bool shown) override {
    SettingField::setShown(shown);
    m_form->setRowVisible(m_rank, shown && check()->isChecked());
    m_form->setRowVisible(m_block, shown && check()->isChecked());
  }
  void onEdited(const std::function<void()>& edited) override {
    QObject::connect(check(), &QCheckBox::toggled, check(), edited);
    for (QSpinBox* b : {m_rank, m_block}) QObject::connect(b, &QSpinBox::valueChanged, b, edited);
  }

 private:
  QCheckBox* check() const { return static_cast<QCheckBox*>(widget()); }
  QSpinBox* m_rank;
  QSpinBox* m_block;
};

}  // namespace

std::unique_ptr<SettingField> SettingField::create(const Setting& row, QWidget* parent) {
  switch (row.type) {
    case SettingType::Int:
    case SettingType::RngState: return std::make_unique<IntField>(row, parent);
    case SettingType::Real: return std::make_unique<RealField>(row, parent);
    case SettingType::Choice: return std::make_unique<ComboField>(row, parent);
    case SettingType::Switch: return std::make_unique<SwitchField>(row, parent);
    case SettingType::Text:
      if (row.form.suggestions) return std::make_unique<ComboField>(row, parent);
      return std::make_unique<TextField>(row, parent);
    case SettingType::RankBlock: return std::make_unique<RankBlockField>(row, parent);
  }
  return std::make_unique<TextField>(row, parent);
}

void SettingField::addTo(QFormLayout* form) {
  m_form = form;
  form->addRow(QObject::tr(m_row.form.label), m_widget);
}

void SettingField::setShown(bool shown) {
  if (m_form) m_form->setRowVisible(m_widget, shown);
}

}  // namespace shardscope
