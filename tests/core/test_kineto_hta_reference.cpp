// ShardScope's HTA metrics against Holistic Trace Analysis' own numbers on the
// same fixtures (tests/data/kineto/hta_reference.json, written by
// hta_reference.py from HTA's code; see its header for the HTA sources, the
// pandas version and the exact calls). Issue 12 asks for HTA's results to
// 0.01 percentage points; times must agree to the nanosecond.
//
// Whole-trace mode is ShardScope's own (every event, exact nanoseconds). HTA's
// nearest setting (no ns rounding, last step included) is compared only where
// it computes the same thing: the temporal breakdown and the overlap of
// two_ranks, fsdp_job and int_ts_float_dur. Not compared, for HTA reasons the
// README states: its kernel-type table there (_get_gpu_kernel_type_time
// truncates each segment with astype(int) once timestamps keep fractions) and
// epoch_float_job (unrounded epoch microseconds are doubles on a 0.25 µs grid).
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "kineto/hta_metrics.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_set.h"

using namespace shardscope::kineto;

namespace {

const QString kData = QString(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";
constexpr double kPctTolerance = 0.01;   // percentage points, the bound
constexpr double kTimeToleranceUs = 5e-4;  // below a nanosecond

QJsonObject loadReference() {
  QFile f(kData + "hta_reference.json");
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
  if (doc.isNull()) qFatal("hta_reference.json: %s", qPrintable(error.errorString()));
  return doc.object();
}

JobAnalysis analyzeJob(const QJsonArray& files, bool whole_trace) {
  std::vector<std::string> inputs;
  for (const QJsonValue& f : files) inputs.push_back((kData + f.toString()).toStdString());
  HtaOptions options;
  options.whole_trace = whole_trace;
  return analyzeTraceSet(loadTraceSet(inputs), options);
}

const RankAnalysis* findRank(const JobAnalysis& job, int rank) {
  for (const RankAnalysis& r : job.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

double us(int64_t ns) { return double(ns) / 1000.0; }

// The largest percentage difference seen, printed at the end for the README's figure.
double g_max_pct_diff = 0;

// One metric: HTA's value (null = NaN) against ShardScope's, within tolerance.
bool agrees(const QJsonValue& hta, double ours, double tolerance, QString* why, const QString& what) {
  const bool hta_nan = hta.isNull();
  if (hta_nan || std::isnan(ours)) {
    if (hta_nan && std::isnan(ours)) return true;
  } else {
    if (tolerance == kPctTolerance) g_max_pct_diff = std::max(g_max_pct_diff, std::abs(hta.toDouble() - ours));
    if (std::abs(hta.toDouble() - ours) <= tolerance) return true;
  }
  *why += QString("%1: HTA %2, ShardScope %3\n").arg(what, hta_nan ? "null" : QString::number(hta.toDouble(), 'g', 12),
                                                     QString::number(ours, 'g', 12));
  return false;
}

// Compares one job's ranks; returns the list of disagreements (empty when all agree).
QString compareJob(const QString& name, const QJsonObject& ref, const JobAnalysis& job, bool kernel_types) {
  QString why;
  const QJsonObject ranks = ref["ranks"].toObject();
  if (size_t(ranks.size()) != job.ranks.size())
    why += QString("%1: HTA has %2 ranks, ShardScope %3\n").arg(name).arg(ranks.size()).arg(job.ranks.size());
  std::map<std::string, int64_t> job_types;  // ShardScope's per-rank tables summed, as HTA sums them
  for (auto it = ranks.begin(); it != ranks.end(); ++it) {
    const QJsonObject h = it.value().toObject();
    const RankAnalysis* r = findRank(job, it.key().toInt());
    const QString at = QString("%1 rank %2 ").arg(name, it.key());
    if (!r) {
      why += at + "missing in ShardScope\n";
      continue;
    }
    const HtaRankMetrics& m = r->hta;
    agrees(h["kernel_time_us"], us(m.kernel_time_ns), kTimeToleranceUs, &why, at + "kernel_time_us");
    agrees(h["idle_us"], us(m.idle_ns), kTimeToleranceUs, &why, at + "idle_us");
    agrees(h["compute_us"], us(m.compute_ns), kTimeToleranceUs, &why, at + "compute_us");
    agrees(h["non_compute_us"], us(m.non_compute_ns), kTimeToleranceUs, &why, at + "non_compute_us");
    agrees(h["idle_pct"], m.idle_pct, kPctTolerance, &why, at + "idle_pct");
    agrees(h["compute_pct"], m.compute_pct, kPctTolerance, &why, at + "compute_pct");
    agrees(h["non_compute_pct"], m.non_compute_pct, kPctTolerance, &why, at + "non_compute_pct");
    agrees(h["overlap_pct"], m.overlap_pct, kPctTolerance, &why, at + "overlap_pct");
    if (!kernel_types) continue;
    // HTA also lists combinations that lasted 0 (ties in its sort); those carry no time.
    std::map<std::string, int64_t> ours;
    for (const auto& [label, ns] : m.kernel_type_ns) {
      if (ns != 0) ours[label] = ns;
      job_types[label] += ns;
    }
    const QJsonObject types = h["kernel_types_us"].toObject();
    for (auto t = types.begin(); t != types.end(); ++t) {
      const auto found = ours.find(t.key().toStdString());
      agrees(t.value(), found == ours.end() ? 0.0 : us(found->second), kTimeToleranceUs, &why,
             at + "kernel type " + t.key());
      if (found != ours.end()) ours.erase(found);
    }
    for (const auto& [label, ns] : ours)
      why += at + QString("kernel type %1: ShardScope %2 us, not in HTA's table\n").arg(label.c_str()).arg(us(ns));
  }
  if (kernel_types) {
    // The job-wide table get_gpu_kernel_breakdown returns: each combination's share of the sum.
    int64_t total = 0;
    for (const auto& [label, ns] : job_types) total += ns;
    const QJsonObject types = ref["kernel_types"].toObject();
    for (auto t = types.begin(); t != types.end(); ++t) {
      const auto found = job_types.find(t.key().toStdString());
      const double pct = found == job_types.end() || total == 0 ? 0.0 : 100.0 * double(found->second) / double(total);
      agrees(t.value().toObject()["pct"], pct, kPctTolerance, &why, name + " job kernel type % " + t.key());
    }
  }
  return why;
}

}  // namespace

class TestKinetoHtaReference : public QObject {
  Q_OBJECT

  QJsonObject ref_ = loadReference();

  QJsonObject job(const char* name) const { return ref_["jobs"].toObject()[name].toObject(); }

 private slots:
  void referenceNamesItsSource() {
    for (const char* key : {"hta_commit", "date", "pandas", "calls"}) QVERIFY2(ref_.contains(key), key);
    QCOMPARE(ref_["hta_repository"].toString(), QString("facebookresearch/HolisticTraceAnalysis"));
  }

  void agreesWithHta_data() {
    QTest::addColumn<QString>("name");
    for (const char* name : {"two_ranks", "fsdp_job", "epoch_float_job", "int_ts_float_dur"})
      QTest::newRow(name) << QString(name);
  }
  void agreesWithHta() {
    QFETCH(QString, name);
    const QJsonObject j = job(name.toUtf8().constData());
    QVERIFY2(!j["hta"].toObject().contains("hta_error"), qPrintable(j["hta"].toObject()["hta_error"].toString()));
    const QString why = compareJob(name, j["hta"].toObject(), analyzeJob(j["files"].toArray(), false), true);
    QVERIFY2(why.isEmpty(), qPrintable("\n" + why));
  }

  void wholeTraceAgreesWithHtaUnrounded_data() {
    QTest::addColumn<QString>("name");
    for (const char* name : {"two_ranks", "fsdp_job", "int_ts_float_dur"}) QTest::newRow(name) << QString(name);
  }
  void wholeTraceAgreesWithHtaUnrounded() {
    QFETCH(QString, name);
    const QJsonObject j = job(name.toUtf8().constData());
    const QString why = compareJob(name, j["whole_trace"].toObject(), analyzeJob(j["files"].toArray(), true), false);
    QVERIFY2(why.isEmpty(), qPrintable("\n" + why));
  }

  void cleanupTestCase() { qInfo("largest difference from HTA: %.3g percentage points", g_max_pct_diff); }

  void cpuOnlyGlooTracesHaveNoHtaMetrics() {
    // HTA refuses these bare-array traces (no distributedInfo); ShardScope reads
    // them with --rank-of and finds no GPU kernels, so it reports no HTA metrics either.
    const QJsonObject j = job("torch_ddp_gloo");
    QVERIFY(j["hta"].toObject()["hta_error"].toString().contains("distributedInfo"));
    TraceSetOptions options;
    const QJsonArray files = j["files"].toArray();
    std::vector<std::string> inputs;
    for (int r = 0; r < files.size(); ++r) {
      inputs.push_back((kData + files[r].toString()).toStdString());
      options.rank_of[inputs.back()] = r;
    }
    const JobAnalysis analysis = analyzeTraceSet(loadTraceSet(inputs, options), {});
    QCOMPARE(analysis.ranks.size(), size_t(2));
    for (const RankAnalysis& r : analysis.ranks) QVERIFY(!r.hta.has_kernels);
  }
};

QTEST_GUILESS_MAIN(TestKinetoHtaReference)
#include "test_kineto_hta_reference.moc"
