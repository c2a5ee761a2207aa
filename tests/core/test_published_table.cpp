// validate's table reader: a good row reads with its defaults; every bad field
// is one ConfigError naming the table, the row's field and what it allows;
// the shipped table reads and each row of it says where its figures come from.
#include <QtTest>

#include "analysis/published_table.h"
#include "common/errors.h"
#include "common/json_tree.h"

using namespace shardscope;

namespace {

const char* const kRow = R"({"rows": [{
  "name": "22B", "source": "Korthikanti et al. 2022, Table 5", "machine": "a100-sxm4-80gb-selene", "dtype": "fp16",
  "model": {"layers": 48, "hidden": 6144, "heads": 64, "vocab": 51200, "seq": 2048},
  "parallel": {"gpus": 8, "tp": 8, "dp": 1},
  "batch": {"global": 4, "micro": 4}, "recompute": "full",
  "published": {"iteration_s": 1.42}}]})";

// Sets (or with "<delete>", removes) the member at `path` ("model.heads") of the first row.
std::string edited(const std::string& path, const std::string& value) {
  Json doc = Json::parse(kRow);
  Json* at = &doc["rows"][0];
  std::string key = path;
  for (size_t dot; (dot = key.find('.')) != std::string::npos; key = key.substr(dot + 1)) at = &(*at)[key.substr(0, dot)];
  if (value == "<delete>") at->erase(key);
  else (*at)[key] = Json::parse(value);
  return doc.dump();
}

QString errorOf(const std::string& text) {
  try {
    parsePublishedTable(text, "t.json");
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestPublishedTable : public QObject {
  Q_OBJECT

 private slots:
  void goodRowWithDefaults() {
    const std::vector<PublishedRow> rows = parsePublishedTable(kRow, "t.json");
    QCOMPARE(rows.size(), size_t(1));
    const PublishedRow& r = rows[0];
    QCOMPARE(r.model.ffn, 4 * 6144);  // ffn defaults to 4h
    QCOMPARE(r.model.kv_heads, 64);   // kv_heads to heads
    QVERIFY(!r.model.gated_mlp && r.model.learned_positions && r.model.tied_embeddings && r.model.biases);
    QCOMPARE(r.parallel.pp, 1);
    QCOMPARE(r.parallel.cp, 1);
    QVERIFY(!r.parallel.sp);
    QCOMPARE(r.parallel.data_parallel, Strategy::Ddp);
    QCOMPARE(r.recompute, Checkpointing::Full);
    QCOMPARE(r.attention, Attention::Flash);
    QVERIFY(!r.dropout && !r.fp32_grads);
    QCOMPARE(*r.published.iteration_s, 1.42);
    QVERIFY(!r.published.param_opt_gib);
  }

  void badField_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expected");
    const auto row = [](const char* tag, const char* path, const char* value, const char* expected) {
      QTest::newRow(tag) << path << value << expected;
    };
    row("name missing", "name", "<delete>", "rows[0].name is missing");
    row("source empty", "source", R"("")", "rows[0].source must be a non-empty string");
    row("dtype fp8", "dtype", R"("fp8")", "rows[0].dtype must be one of bf16, fp16, got 'fp8'");
    row("recompute unknown", "recompute", R"("some")", "rows[0].recompute must be one of");
    row("grad dtype", "grad_dtype", R"("fp16")", "rows[0].grad_dtype must be one of bf16, fp32");
    row("unknown row key", "comment", R"("x")", "rows[0].comment is not a field of rows[0]; allowed:");
    row("layers zero", "model.layers", "0", "rows[0].model.layers must be a whole number >= 1, got 0");
    row("hidden fractional", "model.hidden", "6144.5", "rows[0].model.hidden must be a whole number >= 1");
    row("heads not dividing", "model.heads", "100", "rows[0].model.heads must divide hidden (6144), got 100");
    row("kv heads not dividing", "model.kv_heads", "5", "rows[0].model.kv_heads must divide heads (64)");
    row("ffn kind", "model.ffn_kind", R"("relu")", "rows[0].model.ffn_kind must be one of gelu, swiglu");
    row("attention", "model.attention", R"("sparse")", "rows[0].model.attention must be one of");
    row("dropout a string", "model.dropout", R"("yes")", "rows[0].model.dropout must be true or false");
    row("model typo", "model.hiden", "6144", "rows[0].model.hiden is not a field of rows[0].model");
    row("model missing", "model", "<delete>", "rows[0].model is missing");
    row("tp zero", "parallel.tp", "0", "rows[0].parallel.tp must be a whole number >= 1, got 0");
    row("gpus not the product", "parallel.gpus", "16", "rows[0].parallel.gpus must equal tp x pp x dp x cp (8 x 1 x 1 x 1), got 16");
    row("schedule", "parallel.schedule", R"("zb")", "rows[0].parallel.schedule must be one of gpipe, 1f1b, interleaved");
    row("data parallel", "parallel.data_parallel", R"("zero4")", "rows[0].parallel.data_parallel must be one of");
    row("sp a number", "parallel.sp", "1", "rows[0].parallel.sp must be true or false");
    row("global not a multiple", "batch.global", "6", "rows[0].batch.global must be a multiple of micro x dp (4), got 6");
    row("micro missing", "batch.micro", "<delete>", "rows[0].batch.micro is missing");
    row("time negative", "published.iteration_s", "-1", "rows[0].published.iteration_s must be a positive number");
    row("nothing published", "published", "{}", "rows[0].published must hold iteration_s, tflops_per_gpu or memory_gib");
    row("tflops without flops", "published", R"({"tflops_per_gpu": 140})", "rows[0].published.flops is missing");
    row("flops unknown", "published", R"({"tflops_per_gpu": 140, "flops": "8N"})", "rows[0].published.flops must be one of megatron, 6N");
    row("flops alone", "published", R"({"iteration_s": 1, "flops": "6N"})", "rows[0].published.flops applies only with tflops_per_gpu");
    row("memory empty", "published", R"({"memory_gib": {}})", "must hold param_opt, activations or both");
    row("memory key", "published", R"({"memory_gib": {"params": 3}})", "rows[0].published.memory_gib.params is not a field");
    row("param_opt rank unknown", "published", R"({"memory_gib": {"param_opt": 3, "param_opt_rank": "last"}})",
        "rows[0].published.memory_gib.param_opt_rank must be one of most_loaded, interior_stage, got 'last'");
    row("interior stage without stages", "published",
        R"({"memory_gib": {"param_opt": 3, "param_opt_rank": "interior_stage"}})",
        "rows[0].published.memory_gib.param_opt_rank interior_stage needs param_opt and pp >= 3");
  }

  void badField() {
    QFETCH(QString, path);
    QFETCH(QString, value);
    QFETCH(QString, expected);
    const QString error = errorOf(edited(path.toStdString(), value.toStdString()));
    QVERIFY2(error.startsWith("table t.json: "), qPrintable(error));
    QVERIFY2(error.contains(expected), qPrintable(error));
    QVERIFY(!error.contains('\n'));
  }

  void badDocument() {
    QVERIFY(errorOf("{\"rows\": [").startsWith("table t.json:1:"));
    QVERIFY(errorOf("[]").contains("the document must be an object {\"rows\": [...]}"));
    QVERIFY(errorOf(R"({"rows": []})").contains("rows must be a non-empty array"));
    QVERIFY(errorOf(R"({"rows": [], "colums": 1})").contains("'colums' is not a field of the table"));
    QVERIFY(errorOf(R"({"rows": [5]})").contains("rows[0] must be an object, got 5"));
    std::string twice = kRow;
    twice.insert(twice.find("\"source\""), "\"name\": \"again\", ");
    QVERIFY(errorOf(twice).contains("appears twice"));
  }

  // The shipped table: every row of the published-runs list, each with its source.
  void shippedTable() {
    qputenv("SHARDSCOPE_RESOURCES", QByteArray(SHARDSCOPE_SOURCE_DIR "/resources"));
    const std::vector<PublishedRow> rows = loadPublishedTable(defaultPublishedTablePath());
    int times = 0, memory = 0;
    for (const PublishedRow& r : rows) {
      QVERIFY2(r.source.find("20") != std::string::npos, r.name.c_str());  // a paper and its year
      times += r.published.iteration_s ? 1 : 0;
      memory += (r.published.param_opt_gib ? 1 : 0) + (r.published.activations_gib ? 1 : 0);
    }
    QCOMPARE(times, 8);    // Table 5: four models, two columns
    QCOMPARE(memory, 12);  // Figure 1: four models, params + optimizer and two activation bars
  }
};

QTEST_APPLESS_MAIN(TestPublishedTable)
#include "test_published_table.moc"
