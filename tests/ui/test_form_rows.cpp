// Every settings row with a place in the experiment form works through the
// form: generated from the table (a new row is covered with no test code),
// each row's widget is set to a value the CLI accepts, and the form's config
// must be the run the CLI makes of the same flags. A row the form shows but
// does not read (as attention, checkpointing, wrap and the dtypes once were)
// fails here.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>

#include "../setting_samples.h"
#include "experiment_panel.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

// What the form offers for a row (a combo's items), for Text rows' samples.
std::vector<std::string> offered(QWidget* w) {
  std::vector<std::string> items;
  if (auto* combo = qobject_cast<QComboBox*>(w))
    for (int i = 0; i < combo->count(); ++i) items.push_back(combo->itemText(i).toStdString());
  return items;
}

// Sets the row's widget as a user would, to the flag's text v.
bool setWidget(ExperimentPanel& panel, const Setting& row, const std::string& v) {
  const QString key = QString::fromStdString(row.presetKey());
  const QString text = QString::fromStdString(v);
  QWidget* w = panel.findChild<QWidget*>(key);
  if (row.type == SettingType::RankBlock) {
    auto* check = qobject_cast<QCheckBox*>(w);
    auto* rank = panel.findChild<QSpinBox*>(key + QStringLiteral("-rank"));
    auto* block = panel.findChild<QSpinBox*>(key + QStringLiteral("-block"));
    const QStringList parts = text.split(QLatin1Char(':'));
    if (!check || !rank || !block || parts.size() != 2) return false;
    check->setChecked(true);
    rank->setValue(parts[0].toInt());
    block->setValue(parts[1].toInt());
    return true;
  }
  if (auto* box = qobject_cast<QSpinBox*>(w)) {
    box->setValue(text.toInt());
    return box->value() == text.toInt();
  }
  if (auto* box = qobject_cast<QDoubleSpinBox*>(w)) {
    box->setValue(text.toDouble());
    return box->value() == text.toDouble();
  }
  if (auto* combo = qobject_cast<QComboBox*>(w)) {
    combo->setCurrentIndex(combo->findText(text));
    return combo->currentText() == text;
  }
  if (auto* check = qobject_cast<QCheckBox*>(w)) {
    check->setChecked(v == "on");
    return true;
  }
  if (auto* edit = qobject_cast<QLineEdit*>(w)) {
    edit->setText(text);
    return true;
  }
  return false;
}

}  // namespace

class TestFormRows : public QObject {
  Q_OBJECT
 private slots:
  void everyRowSetThroughTheFormIsTheCliRun_data() {
    QTest::addColumn<QString>("flag");
    int rows = 0;
    for (const Setting& row : settings())
      if (row.inForm()) {
        QTest::newRow(row.flag) << QString::fromLatin1(row.flag);
        ++rows;
      }
    QVERIFY(rows >= 30);
  }

  void everyRowSetThroughTheFormIsTheCliRun() {
    QFETCH(QString, flag);
    const Setting& row = *findSetting(flag.toStdString());
    ExperimentPanel panel;
    QWidget* widget = panel.findChild<QWidget*>(QString::fromStdString(row.presetKey()));
    QVERIFY2(widget, "the form has no field for the row");

    const std::optional<SettingSample> s = validSample(row, offered(widget));
    QVERIFY2(s.has_value(), "no value other than the default that the CLI accepts");
    // The form shows the base run (the row applies to it) and reads it back as the CLI does.
    const RunConfig base = parseRunArgs(s->base);
    panel.setConfig(base);
    QCOMPARE(meaning(panel.config()), meaning(base));
    QVERIFY2(widget->isVisibleTo(&panel), "the row applies to the run, so the form shows it");

    QVERIFY2(setWidget(panel, row, s->value), qPrintable(QString::fromStdString("cannot show " + s->value)));
    QVERIFY2(panel.isValid(), qPrintable(panel.errorText()));
    QCOMPARE(row.get(panel.config()), std::optional<std::string>(s->value));
    QCOMPARE(QString::fromStdString(meaning(panel.config())), QString::fromStdString(meaning(s->config)));

    // setConfig shows it again (a run opened from its trace), and QSettings keeps it.
    ExperimentPanel shown;
    shown.setConfig(s->config);
    QCOMPARE(QString::fromStdString(meaning(shown.config())), QString::fromStdString(meaning(s->config)));
    QTemporaryDir dir;
    QSettings store(dir.filePath(QStringLiteral("form.ini")), QSettings::IniFormat);
    panel.saveSettings(store);
    ExperimentPanel restored;
    restored.restoreSettings(store);
    QCOMPARE(QString::fromStdString(meaning(restored.config())), QString::fromStdString(meaning(s->config)));
  }
};

QTEST_MAIN(TestFormRows)
#include "test_form_rows.moc"
