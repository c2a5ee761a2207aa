#include "preset.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <string_view>

#include "common/errors.h"
#include "config/preset_file.h"
#include "inspect/category_filter.h"

namespace shardscope {

namespace {

// Teaching order for the picker and the start page's lessons; presets not
// listed follow, by name.
const char* const kOrder[] = {"ddp-basics",          "zero-stages-compared", "fsdp-prefetch-on-off",
                              "unit-size",           "hybrid-2x4",           "rank-dependent-hang",
                              "slow-interconnect",   "tp-vs-fsdp",           "tp-x-fsdp-70b",
                              "activation-checkpointing", "tiny-units",      "reduce-dtype",
                              "pipeline-schedules",  "3d-parallelism"};

QString text(const std::string& s) { return QString::fromStdString(s); }

Preset fromFile(const PresetFile& file, const QString& name) {
  Preset p;
  p.name = name;
  p.title = text(file.title);
  p.question = text(file.question);
  p.text = text(file.text);
  p.view = text(file.view);
  p.categories = text(file.categories);
  if (!file.categories.empty()) {
    std::string why;
    if (const auto filter = CategoryFilter::parse(file.categories, &why); !filter || filter->empty())
      throw PresetError((name + QStringLiteral(".json: field \"categories\": ")).toStdString() +
                        (filter ? std::string("at least one category must be drawn") : why));
  }
  p.expectError = file.expect_error;
  for (const PresetFileRun& run : file.runs) {
    PresetRun out;
    out.label = text(run.label);
    for (const std::string& a : run.args) out.args << text(a);
    out.config = run.config;
    p.runs.push_back(std::move(out));
  }
  return p;
}

}  // namespace

QStringList presetViews() {
  QStringList views;
  for (const std::string& v : presetViewNames()) views << text(v);
  return views;
}

QStringList presetConfigFields() {
  QStringList fields;
  for (const std::string& key : presetConfigKeys()) fields << text(key);
  return fields;
}

Preset parsePreset(const QByteArray& json, const QString& name) {
  try {
    return fromFile(parsePresetJson(std::string_view(json.constData(), static_cast<size_t>(json.size())),
                                    (name + QStringLiteral(".json")).toStdString()),
                    name);
  } catch (const ConfigError& e) {
    throw PresetError(e.what());
  }
}

Preset loadPresetFile(const QString& path) {
  const QString name = QFileInfo(path).completeBaseName();
  Preset p;
  if (path.startsWith(QLatin1Char(':'))) {
    // A built-in preset, compiled in as a Qt resource.
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
      throw PresetError(QStringLiteral("%1: cannot read the preset (%2)").arg(path, file.errorString()).toStdString());
    p = parsePreset(file.readAll(), name);
    p.source = path;
    return p;
  }
  try {
    p = fromFile(readPresetFile(path.toStdString()), name);
  } catch (const ConfigError& e) {
    throw PresetError(e.what());
  }
  p.source = QFileInfo(path).absoluteFilePath();
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
  PresetFile file;
  file.title = preset.title.toStdString();
  file.question = preset.question.toStdString();
  file.text = preset.text.toStdString();
  file.view = preset.view.toStdString();
  file.categories = preset.categories.toStdString();
  file.expect_error = preset.expectError;
  for (const PresetRun& run : preset.runs) file.runs.push_back({run.label.toStdString(), {}, run.config});
  return QByteArray::fromStdString(presetFileJson(file));
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
