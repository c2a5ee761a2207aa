// Reading PyTorch profiler traces: timestamps straight from their decimal
// text to integer ns (int, float with ns digits, relative to a
// baseTimeNanoseconds that comes after traceEvents), string pids and their
// metadata names, memory instants from two threads with ties, integers
// beyond int64 kept as text, gzip, the older autograd-profiler format, and
// one clear error (file, byte offset / line:column, what was expected) for
// each bad input.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "common/errors.h"
#include "kineto/decimal_text.h"
#include "kineto/kineto_parser.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_file.h"
#include "kineto/trace_set.h"

using namespace shardscope;
using namespace shardscope::kineto;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";

// The error text of loading `inputs`, or "" when it loaded.
std::string loadError(const std::vector<std::string>& inputs, const TraceSetOptions& o = {}) {
  try {
    loadTraceSet(inputs, o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string write(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

class TestKinetoRead : public QObject {
  Q_OBJECT

 private slots:
  void decimalTextToNanoseconds() {
    QCOMPARE(parseDecimal("12", 3).value, 12000);
    QVERIFY(!parseDecimal("12", 3).float_syntax);
    QCOMPARE(parseDecimal("1.2345", 3).value, 1235);  // 1234.5 ns rounds half away from zero
    QCOMPARE(parseDecimal("-0.0005", 3).value, -1);
    QCOMPARE(parseDecimal("1e3", 3).value, 1000000);
    QVERIFY(parseDecimal("1e3", 3).float_syntax);
    QCOMPARE(parseDecimal("1700000000123456.789", 3).value, 1700000000123456789);
    QCOMPARE(parseDecimal("99999999999999999999", 0).status, DecimalStatus::OutOfRange);
    QCOMPARE(parseDecimal("9223372036854775807", 0).value, INT64_MAX);
    QCOMPARE(parseDecimal("9223372036854775808", 0).status, DecimalStatus::OutOfRange);
    QCOMPARE(parseDecimal("12abc", 3).status, DecimalStatus::NotANumber);
    QCOMPARE(parseDecimal("", 3).status, DecimalStatus::NotANumber);
    QCOMPARE(ceilToMicros(1001), 2000);
    QCOMPARE(ceilToMicros(-1001), -1000);
    QCOMPARE(floorToMicros(-1001), -2000);
    QCOMPARE(floorToMicros(1999), 1000);
  }

  // The short-number path (no whitespace, at most `scale` fractional digits,
  // 19 digits scaled) must give what the general reader gives: a leading
  // space sends the same text through the general one.
  void shortDecimalsAgreeWithTheGeneralReader() {
    std::mt19937_64 rng(12);
    const char* edges[] = {"0", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775.807",
                           "-9223372036854775.808", "9223372036854775.808", "1.", ".5", "-", "1.2.3", "00012.5",
                           "9999999999999999.999", "1000000000000000000", "12.3456", "-1.0005",
                           "123456789012e3", "1234567x", "12345678.5", "-00000000000000000001", "87654321876543219"};
    const auto check = [](std::string_view text, int scale) {
      char padded[80] = " ";
      std::memcpy(padded + 1, text.data(), std::min(text.size(), sizeof padded - 1));
      const DecimalValue fast = parseDecimal(text, scale),
                         general = parseDecimal(std::string_view(padded, std::min(text.size() + 1, sizeof padded)), scale);
      QVERIFY2(fast.status == general.status && fast.value == general.value &&
                   (fast.status != DecimalStatus::Ok || fast.float_syntax == general.float_syntax),
               (std::string(text) + " at scale " + std::to_string(scale)).c_str());
    };
    for (const char* e : edges)
      for (int scale : {0, 3}) check(e, scale);
    constexpr unsigned long long kPowersOfTen[] = {1, 10, 100, 1000, 10000};
    for (int k = 0; k < 20000; ++k) {
      char text[64];
      const int length = std::snprintf(text, sizeof text, "%s%llu", rng() % 4 == 0 ? "-" : "",
                                       (unsigned long long)(rng() >> (rng() % 64)));
      const int fraction_digits = static_cast<int>(rng() % 5);  // 0: an integer; 4: one past scale 3
      if (fraction_digits > 0)
        std::snprintf(text + length, sizeof text - length, ".%0*llu", fraction_digits,
                      (unsigned long long)(rng() % kPowersOfTen[fraction_digits]));
      for (int scale : {0, 3}) check(text, scale);
    }
  }

  // One event's args never reach the next (the walk clears only the slots an
  // event set), however often a key repeats; keys are found with spaces
  // around their colon too.
  void argsOfOneEventDoNotLeakIntoTheNext() {
    std::string repeats;
    // Keys it does not read between the ones it does (a key given twice is refused: test_kineto_bad_values).
    for (int i = 0; i < 40; ++i) repeats += "\"x" + std::to_string(i) + "\": {}, \"y" + std::to_string(i) + "\" : [1], ";
    const std::string text = "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [\n"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\" :  5, "
                             "\"dur\":1, \"args\": {" + repeats + "\"correlation\" : 7, \"stream\": 3}},\n"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 9, "
                             "\"dur\": 1, \"args\": {\"External id\": 1}},\n"
                             "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 12, \"dur\": 1}]}";
    QTemporaryDir dir;
    const RankTrace t = loadKinetoFile(write(dir, "repeats.json", text));
    QCOMPARE(t.events.size(), size_t(3));
    QCOMPARE(t.events[0].ts_ns, 5000);
    QCOMPARE(t.events[0].correlation, 7);
    QCOMPARE(t.events[0].stream, 3);
    const TraceEvent fresh;
    for (size_t i = 1; i < 3; ++i) {
      QCOMPARE(t.events[i].correlation, fresh.correlation);
      QCOMPARE(t.events[i].stream, fresh.stream);
    }
  }

  void recordStaysCompact() { QVERIFY(sizeof(TraceEvent) <= 48); }

  void baseTimeAfterTraceEvents() {
    const RankTrace t = loadKinetoFile(kData + "base_relative.json");
    QVERIFY(t.base_time_ns.has_value());
    QCOMPARE(*t.base_time_ns, 1700000000000000000);
    QCOMPARE(t.events.size(), size_t(2));
    QCOMPARE(t.events[0].ts_ns, 1234);
    QCOMPARE(t.events[0].dur_ns, 500);
    QCOMPARE(t.absoluteNs(t.events[1].ts_ns), 1700000000000003001);
    QVERIFY(t.any_float_ts);
    QCOMPARE(t.events[1].kind, kineto::EventKind::Kernel);
    QCOMPARE(t.events[1].stream, 7);
    QCOMPARE(t.events[1].correlation, 1);
  }

  void epochFloatTimestampsKeepTheirNanoseconds() {
    const RankTrace t = loadKinetoFile(kData + "epoch_float_ts.json");
    QVERIFY(t.bare_array);
    QCOMPARE(t.events[0].ts_ns, 1700000000123456789);  // a double would give ...456768 or so
    QCOMPARE(t.events[0].dur_ns, 1500);
    QVERIFY(t.events[0].has(kTsFloat));
    QVERIFY(!t.events[1].has(kTsFloat));
    QCOMPARE(t.events[1].ts_ns, 1700000000123456000);
  }

  void stringPidsAndTheirNames() {
    const RankTrace t = loadKinetoFile(kData + "two_ranks/rank1_float_ts.json");
    QCOMPARE(t.rank, 1);
    QCOMPARE(t.world_size, 2);
    const auto pid = t.strings.find("0");
    const auto tid = t.strings.find("stream 7");
    QVERIFY(pid && tid);
    QCOMPARE(t.str(t.process_names.at(*pid)), std::string_view("python3"));
    QCOMPARE(t.str(t.thread_names.at({*pid, *tid})), std::string_view("stream 7"));
    const RankTrace r0 = loadKinetoFile(kData + "two_ranks/rank0_int_ts.json");
    QVERIFY(!r0.any_float_ts);
    const auto gpu = r0.strings.find("0");
    QVERIFY(gpu);
    QCOMPARE(r0.str(r0.process_labels.at(*gpu).at(0)), std::string_view("GPU 0"));
  }

  void memoryFromTwoThreadsStablySorted() {
    const TraceSet set = loadTraceSet({kData + "two_ranks"});
    const RankTrace& t = set.ranks[1];
    QCOMPARE(t.memory.size(), size_t(3));
    QCOMPARE(t.tsOf(t.memory[0]), 5000);  // last in the file, earliest in time
    QCOMPARE(t.memory[0].bytes, 512);
    QCOMPARE(t.tsOf(t.memory[1]), 10000);  // the tie keeps file order: thread 1, then thread 2
    QCOMPARE(t.str(t.memory[1].tid), std::string_view("1"));
    QCOMPARE(t.memory[1].bytes, 1000);
    QCOMPARE(t.str(t.memory[2].tid), std::string_view("2"));
    QCOMPARE(t.memory[2].bytes, -200);
    QCOMPARE(t.events[t.memory[0].event].extra, 0u);  // the event points back at its sample
    const TraceIndex& idx = set.indexes[1];
    QCOMPARE(idx.memory_baseline, 4000 - 512);
    QCOMPARE(idx.peak_allocated, 5000);
    QCOMPARE(idx.peak_reserved, 8000);
    QCOMPARE(t.out_of_memory.size(), size_t(1));
    QCOMPARE(t.out_of_memory[0].bytes, 85899345920);
  }

  void integersBeyondInt64KeptAsText() {
    const RankTrace t = loadKinetoFile(kData + "two_ranks/rank1_float_ts.json");
    QCOMPARE(t.big_integers.size(), size_t(1));
    QCOMPARE(t.str(t.big_integers[0].field), std::string_view("Addr"));
    QCOMPARE(t.str(t.big_integers[0].text), std::string_view("18446744073709551616"));
    const auto& e = t.events[t.memory[2].event];  // the sample of thread 2 with that Addr
    QCOMPARE(t.memory[2].addr, 0u);
    QVERIFY(t.big_integers[0].byte_offset > 0);
    QCOMPARE(t.str(t.tidOf(e)), std::string_view("2"));
    QCOMPARE(t.catOf(e), std::string_view("cpu_instant_event"));
  }

  void collectiveFoundThroughCorrelation() {
    const TraceSet set = loadTraceSet({kData + "two_ranks"});
    const RankTrace& t = set.ranks[0];
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(idx.collectives.size(), size_t(2));
    const TraceCollective& ag = idx.collectives[1];
    QCOMPARE(t.str(t.events[ag.kernel].name).substr(0, 13), std::string_view("ncclDevKernel"));
    QVERIFY(ag.op != kNone);
    QCOMPARE(t.str(t.events[ag.op].name), std::string_view("nccl:all_gather"));
    QCOMPARE(ag.kind, Collective::AllGather);
    QCOMPARE(ag.bytes, 4096);
    QCOMPARE(t.str(t.events[idx.collectives[0].op].name), std::string_view("record_param_comms"));
    QCOMPARE(idx.steps.size(), size_t(3));
  }

  // Traces before "In msg nelems" (PyTorch <= 2.0) size a collective only by
  // its op's Input Dims and Input type: what can be derived is, the rest is
  // said to be unknown. An aten op's Input Dims are not kept.
  void collectivesSizedFromInputDims() {
    const TraceSet set = loadTraceSet({kData + "input_dims_only.json"});
    const RankTrace& t = set.ranks[0];
    const TraceIndex& idx = set.indexes[0];
    QCOMPARE(t.collective_args.size(), size_t(4));
    QCOMPARE(idx.collectives.size(), size_t(4));
    const TraceCollective& ar = idx.collectives[0];
    QCOMPARE(ar.kind, Collective::AllReduce);
    QCOMPARE(ar.bytes, int64_t(2049000) * 4);
    QVERIFY(ar.bytes_from_dims);
    const TraceCollective& ag = idx.collectives[1];
    QCOMPARE(ag.kind, Collective::AllGather);
    QCOMPARE(ag.bytes, int64_t(10 * 50 * 2) * 2);  // bf16 input, x world size 2 for the output; the Int scalar adds nothing
    QCOMPARE(idx.collectives[2].kind, Collective::Broadcast);
    QCOMPARE(idx.collectives[2].bytes, int64_t(-1));  // a tensor list: its shapes are not given apart
    QCOMPARE(idx.collectives[3].kind, Collective::ReduceScatter);
    QCOMPARE(idx.collectives[3].bytes, int64_t(-1));  // a dtype of unknown size
    QVERIFY(!idx.collectives[3].bytes_from_dims);
    std::ostringstream text;
    printAnalysisText(analyzeTraceSet(set, HtaOptions{}), set, text);
    QVERIFY2(contains(text.str(), "2 collectives sized from their op's Input Dims"), text.str().c_str());
    QVERIFY2(contains(text.str(), "2 collectives of unknown size"), text.str().c_str());
    std::ostringstream json;
    writeAnalysisJson(analyzeTraceSet(set, HtaOptions{}), set, json);
    QVERIFY2(contains(json.str(), "\"sized_from_input_dims\": 1"), json.str().c_str());
  }

  void olderAutogradProfilerFormat() {
    // A real 2-rank Gloo DDP run (make_torch_ddp_trace.py); rank 1 gzipped.
    TraceSetOptions o;
    o.rank_of[kData + "torch_ddp_gloo_rank0.json"] = 0;
    o.rank_of[kData + "torch_ddp_gloo_rank1.json.gz"] = 1;
    const TraceSet set = loadTraceSet({kData + "torch_ddp_gloo_rank0.json", kData + "torch_ddp_gloo_rank1.json.gz"}, o);
    QCOMPARE(set.ranks.size(), size_t(2));
    for (size_t r = 0; r < 2; ++r) {
      const RankTrace& t = set.ranks[r];
      QVERIFY(t.bare_array);
      QVERIFY(t.events.size() > 300);
      size_t ops = 0;
      for (const TraceEvent& e : t.events) ops += e.kind == kineto::EventKind::CpuOp;
      QCOMPARE(ops, t.events.size());
      size_t all_reduce = 0;
      for (const TraceCollective& c : set.indexes[r].collectives) all_reduce += c.kind == Collective::AllReduce;
      QVERIFY(all_reduce >= 1);
      QVERIFY(t.strings.find("DistributedDataParallel.forward").has_value());
    }
  }

  void missingRankNamesTheFile() {
    // Alone, a rank-less file is rank 0 (and the set says so); beside another, it is refused.
    const std::string path = kData + "no_rank.json";
    const TraceSet lone = loadTraceSet({path});
    QCOMPARE(lone.ranks.at(0).rank, 0);
    QCOMPARE(lone.notes.size(), size_t(1));
    const std::string e = loadError({path, kData + "rank1_of_2.json"});
    QVERIFY2(contains(e, path) && contains(e, "distributedInfo.rank") && contains(e, "--rank-of " + path + "=R"), e.c_str());
    TraceSetOptions o;
    o.rank_of[path] = 3;
    QCOMPARE(loadTraceSet({path}, o).ranks.at(0).rank, 3);
  }

  void truncatedGzipSaysSo() {
    const std::string e = loadError({kData + "truncated.json.gz"});
    QVERIFY2(contains(e, "truncated.json.gz: truncated gzip file"), e.c_str());
  }

  void timestampBeyondInt64IsAnErrorWithItsOffset() {
    const std::string e = loadError({kData + "ts_beyond_int64.json"});
    QVERIFY2(contains(e, "ts_beyond_int64.json: byte 126 (line 2, column 77): expected \"ts\""), e.c_str());
  }

  void badJsonNamesLineAndColumn() {
    QTemporaryDir dir;
    const std::string path = write(dir, "bad.json", "{\"traceEvents\": [\n  {\"ph\": \"X\", \"ts\": 1, \"dur\": [}\n]}");
    const std::string e = loadError({path});
    QVERIFY2(contains(e, path + ": ") && contains(e, "line 2") && contains(e, "expected"), e.c_str());
    const std::string not_number = write(dir, "str_ts.json", "[{\"ph\": \"X\", \"ts\": \"12\"}]");
    const std::string e2 = loadError({not_number});
    QVERIFY2(contains(e2, "byte 19 (line 1, column 20): expected a number for \"ts\""), e2.c_str());
    const std::string cut = write(dir, "cut.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1");
    const std::string e3 = loadError({cut});
    QVERIFY2(contains(e3, "cut.json: ") && contains(e3, "expected"), e3.c_str());
    const std::string no_events = write(dir, "empty.json", "{\"schemaVersion\": 1}");
    QVERIFY(contains(loadError({no_events}), "no \"traceEvents\" array"));
  }

  void nonRegularFilesRefused() {
    QTemporaryDir dir;
    const std::string fifo = dir.filePath("pipe.json").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QVERIFY(contains(loadError({fifo}), "pipe.json: not a regular file"));
    QVERIFY(contains(loadError({"/dev/zero"}), "/dev/zero: not a regular file"));
    QVERIFY(contains(loadError({dir.filePath("missing.json").toStdString()}), "cannot open"));
  }

  void gzipNameWithoutGzipData() {
    QTemporaryDir dir;
    const std::string path = write(dir, "plain.json.gz", "[]");
    QVERIFY(contains(loadError({path}), "plain.json.gz: named .gz but is not gzip data"));
  }

  void duplicateRankRefused() {
    QTemporaryDir dir;
    const std::string a = write(dir, "a.json", "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": []}");
    const std::string b = write(dir, "b.json", "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": []}");
    const std::string e = loadError({a, b});
    QVERIFY2(contains(e, "b.json: rank 0 again (also " + a + ")"), e.c_str());
  }

  void bothInflatersReadTheSameBytes() {
    // libdeflate (whole file, when built with it) and zlib's stream, on one
    // member, and on two concatenated members (one gzip stream to both).
    QTemporaryDir dir;
    std::ifstream a(kData + "fsdp_job/rank0.json.gz", std::ios::binary), b(kData + "torch_ddp_gloo_rank1.json.gz", std::ios::binary);
    const std::string first((std::istreambuf_iterator<char>(a)), {}), second((std::istreambuf_iterator<char>(b)), {});
    QVERIFY(!first.empty() && !second.empty());
    const std::string two = write(dir, "two.json.gz", first + second);
    for (const std::string& path : {kData + "fsdp_job/rank0.json.gz", kData + "torch_ddp_gloo_rank1.json.gz", two}) {
      const PaddedBuffer fast = readTraceFile(path, kMaxTraceBytes, GzipInflater::Fastest);
      const PaddedBuffer zlib = readTraceFile(path, kMaxTraceBytes, GzipInflater::Zlib);
      QCOMPARE(fast.size, zlib.size);
      QVERIFY2(fast.size > 1000 && std::memcmp(fast.data.get(), zlib.data.get(), fast.size) == 0, path.c_str());
      QCOMPARE(fast.data[fast.size], '\0');  // the padding the parser needs
    }
    const PaddedBuffer whole = readTraceFile(two);
    const PaddedBuffer one = readTraceFile(kData + "fsdp_job/rank0.json.gz");
    QVERIFY2(whole.size > one.size && std::memcmp(whole.data.get(), one.data.get(), one.size) == 0,
             "the second member follows the first");
    // A cap below the first member's size: the same error from both.
    for (GzipInflater inflater : {GzipInflater::Fastest, GzipInflater::Zlib}) {
      try {
        readTraceFile(two, 4096, inflater);
        QFAIL("4096 bytes should not hold the inflated trace");
      } catch (const ConfigError& e) {
        QVERIFY2(contains(e.what(), "inflates to more than the limit (0.00 GiB; "), e.what());
      }
    }
  }

  void inflatedSizeCapIsStated() {
    TraceSetOptions o;
    o.max_bytes = 1000;
    o.rank_of[kData + "torch_ddp_gloo_rank1.json.gz"] = 1;
    const std::string e = loadError({kData + "torch_ddp_gloo_rank1.json.gz"}, o);
    QVERIFY2(contains(e, "inflates to more than the limit (0.00 GiB; "), e.c_str());
  }
};

QTEST_GUILESS_MAIN(TestKinetoRead)
#include "test_kineto_read.moc"
