#include "preset.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "config/settings.h"

namespace shardscope {

namespace {

using Json = nlohmann::json;  // sorted keys, as presets have always been read

// Teaching order for the picker; presets not listed follow, by name.
const char* const kOrder[] = {"ddp-basics",        "zero-stages-compared", "fsdp-prefetch-on-off", "unit-size",
                              "hybrid-2x4",        "slow-interconnect",    "rank-dependent-hang"};

[[noreturn]] void fail(const QString& file, const QString& what) {
  throw PresetError((file + QStringLiteral(": ") + what).toStdString());
}

QString typeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return QStringLiteral("null");
    case Json::value_t::boolean: return QStringLiteral("a boolean");
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return QStringLiteral("a number");
    case Json::value_t::string: return QStringLiteral("a string");
    case Json::value_t::array: return QStringLiteral("an array");
    case Json::value_t::object: return QStringLiteral("an object");
    default: return QStringLiteral("undefined");
  }
}

QString text(const std::string& s) { return QString::fromStdString(s); }

QString requireString(const Json& o, const char* key, const QString& file, bool required) {
  const auto it = o.find(key);
  if (it == o.end()) {
    if (required) fail(file, QStringLiteral("missing field \"%1\" (a non-empty string)").arg(key));
    return {};
  }
  if (!it->is_string() || text(it->get<std::string>()).trimmed().isEmpty())
    fail(file, QStringLiteral("field \"%1\" must be a non-empty string, got %2").arg(key, typeName(*it)));
  return text(it->get<std::string>()).trimmed();
}

// A JSON value as the CLI would have it typed: integers without a decimal
// point; on/off settings (the settings table's Switch rows) also as booleans.
QString argText(const Json& v, const Setting& setting, const QString& where) {
  const QString key = QString::fromStdString(setting.presetKey());
  if (v.is_string()) return text(v.get<std::string>());
  if (v.is_number_integer()) return QString::number(v.get<qint64>());
  if (v.is_number_unsigned()) return QString::number(v.get<quint64>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return QString::number(static_cast<qint64>(d));
    return QString::number(d, 'g', 17);
  }
  if (v.is_boolean()) {
    if (setting.type == SettingType::Switch) return v.get<bool>() ? QStringLiteral("on") : QStringLiteral("off");
    fail(where, QStringLiteral("\"%1\" must be a string or a number, got a boolean").arg(key));
  }
  fail(where, QStringLiteral("\"%1\" must be a string or a number, got %2").arg(key, typeName(v)));
}

PresetRun parseRun(const Json& value, int index, const QString& file) {
  const QString where = QStringLiteral("%1: runs[%2]").arg(file).arg(index);
  if (!value.is_object()) fail(where, QStringLiteral("must be an object with \"config\", got %1").arg(typeName(value)));
  for (const auto& [key, member] : value.items())
    if (key != "label" && key != "config")
      fail(where, QStringLiteral("unknown field \"%1\" (a run has \"label\" and \"config\")").arg(text(key)));
  PresetRun out;
  out.label = requireString(value, "label", where, false);
  const auto config_it = value.find("config");
  if (config_it == value.end() || !config_it->is_object())
    fail(where, QStringLiteral("field \"config\" must be an object of CLI flags without \"--\", got %1")
                    .arg(config_it == value.end() ? QStringLiteral("undefined") : typeName(*config_it)));
  const Json& config = *config_it;
  const QStringList fields = presetConfigFields();
  const QString config_where = where + QStringLiteral(".config");
  for (const auto& [key, member] : config.items())
    if (!fields.contains(text(key)))
      fail(config_where, QStringLiteral("unknown field \"%1\"; fields are the CLI's flags without \"--\": %2")
                             .arg(text(key), fields.join(QStringLiteral(", "))));
  // The modeled clock unless the preset says otherwise; --model first, since a
  // model preset resets the shape fields given before it.
  out.args << QStringLiteral("--clock") << QStringLiteral("modeled");
  std::vector<std::string> keys;
  for (const auto& [key, member] : config.items()) keys.push_back(key);  // sorted
  if (const auto model = std::find(keys.begin(), keys.end(), "model"); model != keys.end())
    std::rotate(keys.begin(), model, model + 1);
  for (const std::string& key : keys)
    out.args << QStringLiteral("--") + text(key) << argText(config.at(key), *findSetting(key), config_where);
  std::vector<std::string> args;
  for (const QString& a : out.args) args.push_back(a.toStdString());
  try {
    bool help = false;
    out.config = parseRunArgs(args, &help);
  } catch (const ConfigError& e) {
    fail(config_where, QString::fromStdString(e.what()));
  }
  if (out.label.isEmpty())
    out.label = QStringLiteral("%1 · %2 ranks").arg(text(strategyName(out.config.strategy))).arg(out.config.ranks);
  return out;
}

}  // namespace

QStringList presetViews() {
  return {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("buckets"),
          QStringLiteral("units"),    QStringLiteral("loss"),   QStringLiteral("comm")};
}

QStringList presetConfigFields() {
  QStringList fields;
  for (const Setting& s : settings())
    if (s.flag && s.in_presets) fields << QString::fromStdString(s.presetKey());
  return fields;
}

Preset parsePreset(const QByteArray& json, const QString& name) {
  const QString file = name + QStringLiteral(".json");
  Json root;
  try {
    root = Json::parse(json.constData(), json.constData() + json.size());
  } catch (const Json::parse_error& e) {
    // nlohmann's message starts "[json.exception.parse_error.101] parse error at line 1, column 11: …".
    std::string what = e.what();
    if (const size_t colon = what.find(": "); what.rfind("[json.exception", 0) == 0 && colon != std::string::npos)
      what = what.substr(colon + 2);
    fail(file, QStringLiteral("not valid JSON at byte %1: %2").arg(e.byte).arg(text(what)));
  }
  if (!root.is_object()) fail(file, QStringLiteral("the top level must be a JSON object"));
  static const QStringList kKeys = {QStringLiteral("title"), QStringLiteral("text"), QStringLiteral("view"),
                                    QStringLiteral("expect_error"), QStringLiteral("runs")};
  for (const auto& [key, member] : root.items())
    if (!kKeys.contains(text(key)))
      fail(file, QStringLiteral("unknown field \"%1\" (a preset has %2)").arg(text(key), kKeys.join(QStringLiteral(", "))));
  Preset p;
  p.name = name;
  p.title = requireString(root, "title", file, true);
  p.text = requireString(root, "text", file, true);
  p.view = requireString(root, "view", file, false);
  if (p.view.isEmpty()) p.view = QStringLiteral("timeline");
  if (!presetViews().contains(p.view))
    fail(file, QStringLiteral("field \"view\" must be one of %1, got \"%2\"").arg(presetViews().join(QStringLiteral(", ")), p.view));
  if (const auto expect = root.find("expect_error"); expect != root.end()) {
    if (!expect->is_boolean())
      fail(file, QStringLiteral("field \"expect_error\" must be true or false, got %1").arg(typeName(*expect)));
    p.expectError = expect->get<bool>();
  }
  const auto runs = root.find("runs");
  if (runs == root.end() || !runs->is_array() || runs->empty())
    fail(file, QStringLiteral("field \"runs\" must be a non-empty array of {\"label\", \"config\"}, got %1")
                   .arg(runs == root.end() ? QStringLiteral("nothing") : typeName(*runs)));
  for (size_t i = 0; i < runs->size(); ++i) p.runs.push_back(parseRun(runs->at(i), static_cast<int>(i), file));
  return p;
}

Preset loadPresetFile(const QString& path) {
  QFile file(path);
  const QString name = QFileInfo(path).completeBaseName();
  if (!file.open(QIODevice::ReadOnly))
    throw PresetError(QStringLiteral("%1: cannot read the preset (%2)").arg(path, file.errorString()).toStdString());
  Preset p = parsePreset(file.readAll(), name);
  p.source = path.startsWith(QLatin1Char(':')) ? path : QFileInfo(path).absoluteFilePath();
  return p;
}

const std::vector<Preset>& builtinPresets() {
  static const std::vector<Preset> presets = [] {
    std::vector<Preset> out;
    QStringList names;
    for (const QFileInfo& info : QDir(QStringLiteral(":/presets")).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
      names << info.completeBaseName();
    QStringList ordered;
    for (const char* n : kOrder)
      if (names.removeOne(QString::fromLatin1(n))) ordered << QString::fromLatin1(n);
    ordered << names;
    for (const QString& n : ordered) out.push_back(loadPresetFile(QStringLiteral(":/presets/%1.json").arg(n)));
    return out;
  }();
  return presets;
}

Preset findPreset(const QString& name_or_path) {
  if (name_or_path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) return loadPresetFile(name_or_path);
  QStringList names;
  for (const Preset& p : builtinPresets()) {
    if (p.name == name_or_path) return p;
    names << p.name;
  }
  throw PresetError(QStringLiteral("unknown preset '%1'; built-in presets: %2 (or give a path to a .json file)")
                        .arg(name_or_path, names.join(QStringLiteral(", ")))
                        .toStdString());
}

QByteArray presetJson(const Preset& preset) {
  nlohmann::ordered_json root;
  root["title"] = preset.title.toStdString();
  root["text"] = preset.text.toStdString();
  root["view"] = preset.view.isEmpty() ? std::string("timeline") : preset.view.toStdString();
  if (preset.expectError) root["expect_error"] = true;
  root["runs"] = nlohmann::ordered_json::array();
  for (const PresetRun& run : preset.runs) {
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    const std::vector<std::string> args = runArgs(run.config);
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
      const Setting* setting = findSetting(args[i]);
      if (!setting || !setting->in_presets) continue;  // --break-on / --break-unit
      const std::string& value = args[i + 1];
      long long n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      // Integers as JSON numbers (as the shipped presets write them); the
      // rest as the exact text the CLI takes.
      if (ec == std::errc() && end == value.data() + value.size() && std::llabs(n) < (1LL << 53))
        config[setting->presetKey()] = n;
      else
        config[setting->presetKey()] = value;
    }
    nlohmann::ordered_json entry;
    entry["label"] = run.label.toStdString();
    entry["config"] = std::move(config);
    root["runs"].push_back(std::move(entry));
  }
  return QByteArray::fromStdString(root.dump(4) + "\n");
}

Preset experimentPreset(const RunConfig& config, const QString& label) {
  Preset p;
  p.title = label;
  p.text = QStringLiteral("An experiment saved from ShardScope. The same flags on the command line: %1")
               .arg(QString::fromStdString(runCommandLine(config)));
  p.view = QStringLiteral("timeline");
  PresetRun run;
  run.label = label;
  run.config = config;
  run.config.break_on.clear();
  run.config.break_units.clear();
  p.runs.push_back(std::move(run));
  return p;
}

}  // namespace shardscope
