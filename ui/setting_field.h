// One experiment-form field bound to its settings-table row: the widget the
// row's type calls for (Int → spin box, Real → double spin box, Choice →
// combo box, Switch → check box, Text → line edit or a combo of suggestions,
// R:L → a check box with two spin boxes), read and written as the text the
// row's flag takes. The form holds only these, so a new row needs no form code.
#pragma once

#include <QString>
#include <QStringList>
#include <functional>
#include <memory>

#include "config/settings.h"

class QFormLayout;
class QWidget;

namespace shardscope {

class SettingField {
 public:
  // The field for a row with a place in the form (Setting::inForm()); its
  // widget is named by the row's preset key and has the flag and help as tooltip.
  static std::unique_ptr<SettingField> create(const Setting& row, QWidget* parent);
  virtual ~SettingField() = default;

  const Setting& row() const { return m_row; }
  QWidget* widget() const { return m_widget; }  // the row's field (a check box for R:L)

  // The value as the flag's argument ("zero3", "0.25", "on", "1:3"); empty: not given.
  virtual QString text() const = 0;
  // Shows a value given as the flag's argument (Setting::get's text); empty:
  // not given. Text the widget cannot show leaves it as it was.
  virtual void setText(const QString& text) = 0;
  // Offers these items (a Choice's or a suggested Text's list).
  virtual void setItems(const QStringList&) {}

  // Adds the field's row(s) to a form, and shows or hides them there.
  virtual void addTo(QFormLayout* form);
  virtual void setShown(bool shown);
  // Calls back on every edit of the field.
  virtual void onEdited(const std::function<void()>& edited) = 0;

 protected:
  SettingField(const Setting& row, QWidget* widget) : m_row(row), m_widget(widget) {}
  QFormLayout* m_form = nullptr;

 private:
  const Setting& m_row;
  QWidget* m_widget;
};

}  // namespace shardscope
