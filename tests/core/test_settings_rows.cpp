// Every row of the settings table, generated from the table (a new row is
// covered with no test code): its get() text sets the same config again, and
// a run using it comes back the same through the CLI's flags, the config JSON
// (flags and typed members) and a preset file. The config JSON's member order
// is the row order, with no key twice; runArgs' order names each flag once.
#include <QtTest>

#include <set>

#include "../setting_samples.h"
#include "config/preset_file.h"

using namespace shardscope;
using namespace shardscope::testing;

class TestSettingsRows : public QObject {
  Q_OBJECT
 private slots:
  void everyRowRoundTripsThroughGet() {
    int rows = 0;
    for (const Setting& row : settings()) {
      if (!row.parses()) continue;
      const RunConfig base = parseRunArgs(applyingFlags(row));
      bool covered = false;
      for (const std::string& v : candidateValues(row, row.get(base))) {
        RunConfig a = base;
        try {
          row.set(a, v);
        } catch (const ConfigError&) {
          continue;  // a candidate this flag refuses (a rendezvous URL given to --node-addr)
        }
        if (row.repeatable) {
          QVERIFY2(!row.args(a).empty() && row.args(a).back() == v, row.flag);
        } else {
          // parse(v) → get() → parse again: the same text, the same run.
          const std::optional<std::string> text = row.get(a);
          QVERIFY2(text.has_value(), row.flag);
          QCOMPARE(*text, v);
          RunConfig b = base;
          row.set(b, *text);
          QCOMPARE(row.get(b), text);
          QCOMPARE(meaning(b), meaning(a));
          QVERIFY2(meaning(a) != meaning(base), row.flag);  // the value took
        }
        covered = true;
        break;
      }
      QVERIFY2(covered, row.flag);
      ++rows;
    }
    QVERIFY(rows >= 40);
  }

  void recordedRowsComeBackFromFlagsJsonAndPresets() {
    // Every row a run records (runArgs writes it) comes back whole.
    for (const Setting* row : argsOrder()) {
      const std::optional<SettingSample> s = validSample(*row);
      QVERIFY2(s.has_value(), row->flag);
      const std::string want = meaning(s->config);
      QVERIFY2(want != meaning(parseRunArgs(s->base)), row->flag);
      // The flags runArgs writes.
      QCOMPARE(meaning(parseRunArgs(runArgs(s->config))), want);
      // Config JSON (as traces and summaries carry it) → read → the same run.
      const nlohmann::ordered_json json = configToJson(s->config);
      QCOMPARE(meaning(configFromJson(json)), want);
      // Its typed members alone (an old trace without "args") give the same JSON.
      if (row->json_key) {
        nlohmann::ordered_json typed = json;
        typed.erase("args");
        typed.erase("command");
        nlohmann::ordered_json back = configToJson(configFromJson(typed));
        back.erase("args");
        back.erase("command");
        QCOMPARE(QString::fromStdString(back.dump()), QString::fromStdString(typed.dump()));
      }
      // A preset file.
      if (row->in_presets) {
        PresetFile preset;
        preset.title = "t";
        preset.text = "x";
        preset.runs.push_back({"run", {}, s->config});
        const PresetFile back = parsePresetJson(presetFileJson(preset), "rows.json");
        QCOMPARE(meaning(back.runs.at(0).config), want);
      }
    }
  }

  void jsonOrderIsRowOrder() {
    std::set<std::string> keys;
    for (const Setting& row : settings())
      if (row.json_key) QVERIFY2(keys.insert(row.json_key).second, row.json_key);  // no key twice
    // A run that writes nearly every member: they come out in row order.
    const RunConfig c =
        parseRunArgs({"--strategy", "hsdp", "--shard-group", "2", "--tp", "2", "--model", "gpt", "--clock", "modeled",
                      "--wrap", "linear", "--reduce-dtype", "fp32", "--param-dtype", "fp32", "--attention", "naive",
                      "--inject-branch", "1:1", "--ranks", "8"});
    const auto rowOf = [](const std::string& key) {
      const std::vector<Setting>& rows = settings();
      for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].json_key && key == rows[i].json_key) return static_cast<int>(i);
      return -1;
    };
    int last = -1;
    size_t members = 0;
    const nlohmann::ordered_json json = configToJson(c);
    for (const auto& [key, value] : json.items()) {
      if (key == "args" || key == "command" || key == "model_preset") continue;
      const int row = rowOf(key);
      QVERIFY2(row > last, key.c_str());
      last = row;
      ++members;
    }
    QVERIFY(members >= 25);
  }

  void argsOrderNamesEachFlagOnce() {
    std::set<const Setting*> seen;
    for (const Setting* row : argsOrder()) QVERIFY2(seen.insert(row).second, row->flag);
    QCOMPARE(argsOrder().front()->presetKey(), std::string("model"));  // a published shape resets the shape flags
    // A setting the config JSON records is rerun by its flag.
    for (const Setting& row : settings())
      if (row.flag && row.json_key) QVERIFY2(seen.count(&row), row.flag);
    // Usage and the form list every flag once.
    std::set<const Setting*> flags;
    for (const Setting* row : flagOrder()) QVERIFY2(flags.insert(row).second, row->flag);
    for (const Setting& row : settings())
      if (row.flag) QVERIFY2(flags.count(&row), row.flag);
  }
};

QTEST_APPLESS_MAIN(TestSettingsRows)
#include "test_settings_rows.moc"
