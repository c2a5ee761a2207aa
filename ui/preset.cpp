#include "preset.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <cmath>

#include "common/errors.h"

namespace shardscope {

namespace {

// Teaching order for the picker; presets not listed follow, by name.
const char* const kOrder[] = {"ddp-basics",        "zero-stages-compared", "fsdp-prefetch-on-off", "unit-size",
                              "hybrid-2x4",        "slow-interconnect",    "rank-dependent-hang"};

[[noreturn]] void fail(const QString& file, const QString& what) {
  throw PresetError((file + QStringLiteral(": ") + what).toStdString());
}

QString typeName(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Bool: return QStringLiteral("a boolean");
    case QJsonValue::Double: return QStringLiteral("a number");
    case QJsonValue::String: return QStringLiteral("a string");
    case QJsonValue::Array: return QStringLiteral("an array");
    case QJsonValue::Object: return QStringLiteral("an object");
    default: return QStringLiteral("undefined");
  }
}

QString requireString(const QJsonObject& o, const QString& key, const QString& file, bool required) {
  const QJsonValue v = o.value(key);
  if (v.isUndefined()) {
    if (required) fail(file, QStringLiteral("missing field \"%1\" (a non-empty string)").arg(key));
    return {};
  }
  if (!v.isString() || v.toString().trimmed().isEmpty())
    fail(file, QStringLiteral("field \"%1\" must be a non-empty string, got %2").arg(key, typeName(v)));
  return v.toString().trimmed();
}

// A JSON value as the CLI would have it typed: integers without a decimal point.
QString argText(const QJsonValue& v, const QString& key, const QString& where) {
  if (v.isString()) return v.toString();
  if (v.isDouble()) {
    const double d = v.toDouble();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return QString::number(static_cast<qint64>(d));
    return QString::number(d, 'g', 17);
  }
  if (v.isBool()) {
    if (key == QLatin1String("reshard-after-forward")) return v.toBool() ? QStringLiteral("on") : QStringLiteral("off");
    fail(where, QStringLiteral("\"%1\" must be a string or a number, got a boolean").arg(key));
  }
  fail(where, QStringLiteral("\"%1\" must be a string or a number, got %2").arg(key, typeName(v)));
}

PresetRun parseRun(const QJsonValue& value, int index, const QString& file) {
  const QString where = QStringLiteral("%1: runs[%2]").arg(file).arg(index);
  if (!value.isObject()) fail(where, QStringLiteral("must be an object with \"config\", got %1").arg(typeName(value)));
  const QJsonObject run = value.toObject();
  for (const QString& key : run.keys())
    if (key != QLatin1String("label") && key != QLatin1String("config"))
      fail(where, QStringLiteral("unknown field \"%1\" (a run has \"label\" and \"config\")").arg(key));
  PresetRun out;
  out.label = requireString(run, QStringLiteral("label"), where, false);
  const QJsonValue config_value = run.value(QStringLiteral("config"));
  if (!config_value.isObject())
    fail(where, QStringLiteral("field \"config\" must be an object of CLI flags without \"--\", got %1")
                    .arg(typeName(config_value)));
  const QJsonObject config = config_value.toObject();
  const QStringList fields = presetConfigFields();
  const QString config_where = where + QStringLiteral(".config");
  for (const QString& key : config.keys())
    if (!fields.contains(key))
      fail(config_where, QStringLiteral("unknown field \"%1\"; fields are the CLI's flags without \"--\": %2")
                             .arg(key, fields.join(QStringLiteral(", "))));
  // The modeled clock unless the preset says otherwise; --model first, since a
  // model preset resets the shape fields given before it.
  out.args << QStringLiteral("--clock") << QStringLiteral("modeled");
  QStringList keys = config.keys();  // QJsonObject keys come sorted
  if (keys.removeOne(QStringLiteral("model"))) keys.prepend(QStringLiteral("model"));
  for (const QString& key : keys) out.args << QStringLiteral("--") + key << argText(config.value(key), key, config_where);
  std::vector<std::string> args;
  for (const QString& a : out.args) args.push_back(a.toStdString());
  try {
    bool help = false;
    out.config = parseRunArgs(args, &help);
  } catch (const ConfigError& e) {
    fail(config_where, QString::fromStdString(e.what()));
  }
  if (out.label.isEmpty())
    out.label = QStringLiteral("%1 · %2 ranks").arg(QString::fromStdString(out.config.strategy)).arg(out.config.ranks);
  return out;
}

}  // namespace

QStringList presetViews() {
  return {QStringLiteral("timeline"), QStringLiteral("memory"), QStringLiteral("buckets"),
          QStringLiteral("units"),    QStringLiteral("loss"),   QStringLiteral("comm")};
}

QStringList presetConfigFields() {
  return {QStringLiteral("strategy"),        QStringLiteral("ranks"),         QStringLiteral("model"),
          QStringLiteral("layers"),          QStringLiteral("hidden"),        QStringLiteral("heads"),
          QStringLiteral("seq"),             QStringLiteral("vocab"),         QStringLiteral("batch"),
          QStringLiteral("steps"),           QStringLiteral("bucket-mb"),     QStringLiteral("first-bucket-mb"),
          QStringLiteral("lr"),              QStringLiteral("unit-blocks"),   QStringLiteral("prefetch"),
          QStringLiteral("reshard-after-forward"), QStringLiteral("shard-group"), QStringLiteral("seed"),
          QStringLiteral("timeout-ms"),      QStringLiteral("inject-branch"), QStringLiteral("clock"),
          QStringLiteral("profile"),         QStringLiteral("backend"),       QStringLiteral("replicate")};
}

Preset parsePreset(const QByteArray& json, const QString& name) {
  const QString file = name + QStringLiteral(".json");
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
  if (error.error != QJsonParseError::NoError)
    fail(file, QStringLiteral("not valid JSON at byte %1: %2").arg(error.offset).arg(error.errorString()));
  if (!doc.isObject()) fail(file, QStringLiteral("the top level must be a JSON object"));
  const QJsonObject root = doc.object();
  static const QStringList kKeys = {QStringLiteral("title"), QStringLiteral("text"), QStringLiteral("view"),
                                    QStringLiteral("expect_error"), QStringLiteral("runs")};
  for (const QString& key : root.keys())
    if (!kKeys.contains(key))
      fail(file, QStringLiteral("unknown field \"%1\" (a preset has %2)").arg(key, kKeys.join(QStringLiteral(", "))));
  Preset p;
  p.name = name;
  p.title = requireString(root, QStringLiteral("title"), file, true);
  p.text = requireString(root, QStringLiteral("text"), file, true);
  p.view = requireString(root, QStringLiteral("view"), file, false);
  if (p.view.isEmpty()) p.view = QStringLiteral("timeline");
  if (!presetViews().contains(p.view))
    fail(file, QStringLiteral("field \"view\" must be one of %1, got \"%2\"").arg(presetViews().join(QStringLiteral(", ")), p.view));
  const QJsonValue expect = root.value(QStringLiteral("expect_error"));
  if (!expect.isUndefined() && !expect.isBool())
    fail(file, QStringLiteral("field \"expect_error\" must be true or false, got %1").arg(typeName(expect)));
  p.expectError = expect.toBool(false);
  const QJsonValue runs = root.value(QStringLiteral("runs"));
  if (!runs.isArray() || runs.toArray().isEmpty())
    fail(file, QStringLiteral("field \"runs\" must be a non-empty array of {\"label\", \"config\"}, got %1")
                   .arg(runs.isUndefined() ? QStringLiteral("nothing") : typeName(runs)));
  const QJsonArray array = runs.toArray();
  for (int i = 0; i < array.size(); ++i) p.runs.push_back(parseRun(array.at(i), i, file));
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
  QJsonObject root;
  root.insert(QStringLiteral("title"), preset.title);
  root.insert(QStringLiteral("text"), preset.text);
  root.insert(QStringLiteral("view"), preset.view.isEmpty() ? QStringLiteral("timeline") : preset.view);
  if (preset.expectError) root.insert(QStringLiteral("expect_error"), true);
  const QStringList fields = presetConfigFields();
  QJsonArray runs;
  for (const PresetRun& run : preset.runs) {
    QJsonObject config;
    const std::vector<std::string> args = runArgs(run.config);
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
      const QString key = QString::fromStdString(args[i]).mid(2);
      if (!fields.contains(key)) continue;  // --break-on / --break-unit
      const QString text = QString::fromStdString(args[i + 1]);
      bool integral = false;
      const qint64 n = text.toLongLong(&integral);
      // Integers as JSON numbers (as the shipped presets write them); the
      // rest as the exact text the CLI takes.
      config.insert(key, integral && std::abs(n) < (qint64{1} << 53) ? QJsonValue(n) : QJsonValue(text));
    }
    QJsonObject entry;
    entry.insert(QStringLiteral("label"), run.label);
    entry.insert(QStringLiteral("config"), config);
    runs.append(entry);
  }
  root.insert(QStringLiteral("runs"), runs);
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
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
