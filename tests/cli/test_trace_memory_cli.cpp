// `analyze` on a .gz that lies or explodes, under an address-space limit
// (ulimit -v, as a shared machine sets it): a truncated file whose last bytes
// read as a 3.8 GB size says "truncated", not std::bad_alloc; a gzip bomb is
// refused at the cap set in SHARDSCOPE_MAX_TRACE_MB, naming it, and under the
// trace cap as it inflates past 256 times its size (the ratio named); a valid
// trace too big for the limit says out of memory and how much it needed.
#include <QtTest>

#include <zlib.h>

#include <QProcess>
#include <QTemporaryDir>

#include <cstdint>
#include <string>

#include <QFile>

#include "cli_process.h"

namespace {

// 2 GB of address space: the CLI's libraries (CUDA's, where built) and a few
// threads fit, a multi-GB buffer does not.
constexpr int kLimitKiB = 2000000;

CliResult analyzeLimited(const QString& file, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return runProcess("/bin/bash",
                    {"-c", QStringLiteral("ulimit -v %1 && exec \"$0\" analyze \"$1\"").arg(kLimitKiB), SHARDSCOPE_CLI_PATH, file},
                    env);
}

// One gzip member holding `bytes` spaces framed as a trace: {"traceEvents": [   ]}.
std::string gzipMember(size_t bytes) {
  std::string json = "{\"traceEvents\": [" + std::string(bytes, ' ') + "]}";
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, json.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(json.data());
  z.avail_in = static_cast<uInt>(json.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : std::string();
}

bool writeBytes(const QString& path, const std::string& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(bytes.data(), static_cast<qint64>(bytes.size())) ==
                                             static_cast<qint64>(bytes.size());
}

}  // namespace

class TestTraceMemoryCli : public QObject {
  Q_OBJECT

 private slots:
  // 11 KB of a gzip file cut short inside a stored block, whose last four
  // bytes (data, read as the trailer's size) say 3.8 GB.
  void truncatedGzipWithAHugeTrailerSaysTruncated() {
    QTemporaryDir dir;
    std::string gz = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};  // gzip header, no name, Unix
    gz += {'\x00', '\xff', '\xff', '\x00', '\x00'};               // stored block, not final, 65535 bytes
    const std::string json = "{\"traceEvents\": [";
    gz += json;
    gz.resize(11 * 1024 - 4, ' ');
    const uint32_t claimed = 3'800'000'000u;
    for (int i = 0; i < 4; ++i) gz.push_back(static_cast<char>((claimed >> (8 * i)) & 0xff));
    const QString path = dir.filePath("cut.json.gz");
    QVERIFY(writeBytes(path, gz));
    const CliResult r = analyzeLimited(path);
    QVERIFY2(r.exit_code == 2, qPrintable(QString::number(r.exit_code) + ": " + r.err));
    QVERIFY2(r.err.contains("truncated gzip file"), qPrintable(r.err));
    QVERIFY2(!r.err.contains("bad_alloc") && !r.err.contains("valid JSON"), qPrintable(r.err));
  }

  // 64 MiB of JSON in a 64 KB file, the cap at 16 MiB: refused at the cap, which the message names.
  void gzipBombIsRefusedAtTheCap() {
    QTemporaryDir dir;
    const std::string member = gzipMember(size_t{64} << 20);
    QVERIFY(!member.empty() && member.size() < (1 << 20));
    const QString path = dir.filePath("bomb.json.gz");
    QVERIFY(writeBytes(path, member));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_MAX_TRACE_MB", "16");
    const CliResult r = analyzeLimited(path, env);
    QVERIFY2(r.exit_code == 2, qPrintable(QString::number(r.exit_code) + ": " + r.err));
    QVERIFY2(r.err.contains("inflates to more than the limit (0.02 GiB; set SHARDSCOPE_MAX_TRACE_MB to allow more)"),
             qPrintable(r.err));
  }

  // 256 MiB of JSON in a 0.25 MB file, the trace cap at its 4 GiB: refused as
  // it passes 256 times the file's size (64 MiB), naming the ratio and how
  // to raise it, while it streams (the 2 GB limit would not hold it whole
  // with the parser's padding and the JSON walk, and a bomb is not "out of
  // memory"). The variable raises the ratio; a bad value is refused by name.
  void gzipBombIsRefusedByItsRatio() {
    QTemporaryDir dir;
    const std::string member = gzipMember(size_t{256} << 20);
    QVERIFY(!member.empty() && member.size() < (1 << 20));
    const QString path = dir.filePath("bomb.json.gz");
    QVERIFY(writeBytes(path, member));
    const CliResult r = analyzeLimited(path);
    QVERIFY2(r.exit_code == 2, qPrintable(QString::number(r.exit_code) + ": " + r.err));
    QVERIFY2(r.err.contains("bomb.json.gz: this .gz inflates past ") &&
                 r.err.contains(QStringLiteral("more than 256 times its %1 bytes").arg(member.size())) &&
                 r.err.contains("set SHARDSCOPE_MAX_GZIP_RATIO"),
             qPrintable(r.err));
    QVERIFY2(!r.err.contains("out of memory") && !r.err.contains("bad_alloc"), qPrintable(r.err));
    QProcessEnvironment raised = QProcessEnvironment::systemEnvironment();
    raised.insert("SHARDSCOPE_MAX_GZIP_RATIO", "1032");
    const CliResult more = analyzeLimited(path, raised);
    QVERIFY2(!more.err.contains("inflates past"), qPrintable(more.err));
    QProcessEnvironment bad = QProcessEnvironment::systemEnvironment();
    bad.insert("SHARDSCOPE_MAX_GZIP_RATIO", "0");
    const CliResult refused = analyzeLimited(path, bad);
    QVERIFY2(refused.exit_code == 2 && refused.err.contains("SHARDSCOPE_MAX_GZIP_RATIO must be a whole number from 1 to 1032"),
             qPrintable(refused.err));
  }

  // 40 gzip members of 64 MiB (2.5 GiB of valid JSON, 2.6 MB on disk) under
  // the 2 GB limit: the buffer cannot grow that far. Out of memory, with the
  // size it needed; not std::bad_alloc, not bad JSON.
  void outOfMemorySaysSoAndHowMuch() {
    QTemporaryDir dir;
    const std::string member = gzipMember(size_t{64} << 20);
    QVERIFY(!member.empty());
    std::string all;
    for (int i = 0; i < 40; ++i) all += member;  // 40 documents in a row: bad JSON, but never read that far
    const QString path = dir.filePath("big.json.gz");
    QVERIFY(writeBytes(path, all));
    // Spaces compress 1000:1: past the bomb ratio unless it is raised, as
    // for data this repetitive it must be.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_MAX_GZIP_RATIO", "1032");
    const CliResult r = analyzeLimited(path, env);
    QVERIFY2(r.exit_code == 3, qPrintable(QString::number(r.exit_code) + ": " + r.err));
    QVERIFY2(r.err.contains("out of memory: reading it needs a buffer of") && r.err.contains(" bytes) for its JSON"),
             qPrintable(r.err));
    QVERIFY2(!r.err.contains("bad_alloc") && !r.err.contains("valid JSON"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestTraceMemoryCli)
#include "test_trace_memory_cli.moc"
