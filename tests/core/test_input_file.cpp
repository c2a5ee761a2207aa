// Opening a user's file (common/input_file.h), the rule every reader shares:
// a FIFO, a symlink to /dev/zero and a directory are refused before a byte is
// read, so nothing blocks or grows; a missing file and an empty name are one
// clear error; a file over the cap is refused with the cap and the variable
// that raises it; a bad variable is an error naming it. Then the same rule
// through the readers: Chrome traces, profiles and PyTorch traces (a .gz is
// capped on what it inflates to). And the one way sizes are written
// (common/units.h's bytesText), which these messages use.
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/input_file.h"
#include "common/units.h"
#include "kineto/trace_file.h"
#include "model/hardware_profile.h"
#include "trace/chrome_trace_reader.h"

using namespace shardscope;

namespace {

std::string write(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The message of the ConfigError f throws ("" when it does not throw one).
template <typename F>
QString errorOf(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : m_name(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(m_name); }

 private:
  const char* m_name;
};

}  // namespace

class TestInputFile : public QObject {
  Q_OBJECT

 private slots:
  void readsARegularFile() {
    QTemporaryDir dir;
    const std::string path = write(dir, "a.json", "{\"x\": 1}");
    QCOMPARE(readInputFile(path, traceFileRule()), std::string("{\"x\": 1}"));
    QCOMPARE(checkInputFile(path, traceFileRule()), uint64_t{8});
    std::FILE* f = openInputFile(path, profileFileRule());
    QVERIFY(f != nullptr);
    std::fclose(f);
    // An empty file is read as empty: each reader says what it makes of that.
    QCOMPARE(readInputFile(write(dir, "empty.json", ""), presetFileRule()), std::string());
  }

  void fifoRefusedWithoutBlocking() {
    QTemporaryDir dir;
    const std::string fifo = dir.filePath("pipe.json").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QElapsedTimer timer;
    timer.start();
    // Opening a FIFO for reading would wait for a writer forever: it is refused before open().
    const QString e = errorOf([&] { readInputFile(fifo, traceFileRule()); });
    QVERIFY2(e.contains(QString::fromStdString("trace " + fifo + ": not a regular file")), qPrintable(e));
    QVERIFY2(e.contains("FIFO"), qPrintable(e));
    QVERIFY(errorOf([&] { openInputFile(fifo, presetFileRule()); }).startsWith("preset "));
    QVERIFY(timer.elapsed() < 5000);
  }

  void devZeroSymlinkRefused() {
    QTemporaryDir dir;
    const std::string link = dir.filePath("zero.json").toStdString();
    QCOMPARE(::symlink("/dev/zero", link.c_str()), 0);
    // Symlinks are followed, then what they name is checked: a device, not a file.
    const QString e = errorOf([&] { readInputFile(link, profileFileRule()); });
    QVERIFY2(e.contains(QString::fromStdString("profile " + link + ": not a regular file")), qPrintable(e));
    QVERIFY2(e.contains("/dev/zero"), qPrintable(e));
    QVERIFY(errorOf([] { checkInputFile("/dev/zero", traceFileRule()); }).contains("not a regular file"));
  }

  void directoryRefused() {
    QTemporaryDir dir;
    const QString e = errorOf([&] { readInputFile(dir.path().toStdString(), traceFileRule()); });
    QVERIFY2(e.contains("is a directory, not a file"), qPrintable(e));
    QVERIFY2(e.contains(dir.path()), qPrintable(e));
  }

  void missingFileAndEmptyName() {
    const QString e = errorOf([] { readInputFile("/nonexistent/run.trace.json", traceFileRule()); });
    QCOMPARE(e, QStringLiteral("trace /nonexistent/run.trace.json: cannot open: no such file"));
    try {
      readInputFile("/nonexistent/x.json", presetFileRule());
      QFAIL("no error for a missing file");
    } catch (const InputFileError& error) {
      QCOMPARE(error.path(), std::string("/nonexistent/x.json"));
      QCOMPARE(error.reason(), std::string("cannot open: no such file"));
    }
    QCOMPARE(errorOf([] { readInputFile("", traceFileRule()); }), QStringLiteral("trace: the file name is empty"));
    QCOMPARE(errorOf([] { checkInputFile("", profileFileRule()); }), QStringLiteral("profile: the file name is empty"));
  }

  // Worked by hand: 1.5 GiB = 1610612736 bytes, 12.34 MiB ≈ 12939428 bytes.
  void sizesAreWrittenOneWay() {
    QCOMPARE(bytesText(1610612736.0), std::string("1.50 GiB"));  // the largest unit reached
    QCOMPARE(bytesText(12939428.0), std::string("12.34 MiB"));
    QCOMPARE(bytesText(1536.0), std::string("1.50 KiB"));
    QCOMPARE(bytesText(1023.0), std::string("1023 bytes"));     // whole bytes have no decimals
    QCOMPARE(bytesText(0.0), std::string("0 bytes"));
    QCOMPARE(bytesText(-2048.0), std::string("-2.00 KiB"));
    QCOMPARE(bytesText(1610612736.0, 1), std::string("1.5 GiB"));  // the precision is a parameter
    QCOMPARE(bytesText(1610612736.0, 0, ByteUnit::MiB), std::string("1536 MiB"));  // so is a fixed unit
    QCOMPARE(bytesText(512.0, 2, ByteUnit::MiB), std::string("0.00 MiB"));
    QCOMPARE(wholeMiBText(1), std::string("1 MiB"));  // a limit, rounded up
    QCOMPARE(wholeMiBText(64ull << 20), std::string("64 MiB"));
    QCOMPARE(inputSizeText(4096ull << 20), std::string("4096 MiB"));
    QCOMPARE(inputSizeText((2ull << 20) + 5), std::string("2.0 MiB"));
    QCOMPARE(inputSizeText(512), std::string("512 bytes"));
    QCOMPARE(std::string(byteUnitName(byteUnitFor(3.0 * kGiB))), std::string("GiB"));
  }

  void overCapNamesTheCapAndTheVariable() {
    QTemporaryDir dir;
    const std::string path = write(dir, "big.json", std::string(2 * 1024 * 1024 + 5, ' '));
    {
      const ScopedEnv env("SHARDSCOPE_MAX_TRACE_MB", "1");
      QCOMPARE(traceFileRule().max_bytes, uint64_t{1024 * 1024});
      const QString e = errorOf([&] { readInputFile(path, traceFileRule()); });
      QVERIFY2(e.contains(QString::fromStdString("trace " + path + ": is 2.0 MiB, more than the 1 MiB a trace may have")),
               qPrintable(e));
      QVERIFY2(e.contains("set SHARDSCOPE_MAX_TRACE_MB to allow more"), qPrintable(e));
    }
    {
      const ScopedEnv env("SHARDSCOPE_MAX_TRACE_MB", "3");
      QCOMPARE(readInputFile(path, traceFileRule()).size(), size_t{2 * 1024 * 1024 + 5});
    }
    // The profile cap is 1 MiB unless raised.
    QVERIFY(errorOf([&] { readInputFile(path, profileFileRule()); }).contains("SHARDSCOPE_MAX_PROFILE_MB"));
    const InputFileRule tiny{"preset", 4, ""};
    QCOMPARE(errorOf([&] { readInputFile(path, tiny); }),
             QString::fromStdString("preset " + path + ": is 2.0 MiB, more than the 4 bytes a preset may have"));
  }

  void badCapVariableIsNamed() {
    for (const char* bad : {"0", "-1", "lots", "2000000", "1.5"}) {
      const ScopedEnv env("SHARDSCOPE_MAX_PRESET_MB", bad);
      const QString e = errorOf([] { presetFileRule(); });
      QVERIFY2(e.startsWith("SHARDSCOPE_MAX_PRESET_MB must be a whole number of MiB from 1 to 1048576"), qPrintable(e));
      QVERIFY2(e.contains(bad), qPrintable(e));
    }
  }

  // The three readers refuse what the rule refuses, in their own error types.
  void readersUseTheRule() {
    QTemporaryDir dir;
    const std::string fifo = dir.filePath("pipe.json").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string zero = dir.filePath("zero.json").toStdString();
    QCOMPARE(::symlink("/dev/zero", zero.c_str()), 0);
    for (const std::string& path : {fifo, zero}) {
      try {
        (void)readChromeTraceFile(path);
        QFAIL("a trace reader read a non-regular file");
      } catch (const TraceFormatError& e) {
        QVERIFY2(QString(e.what()).contains(QString::fromStdString("trace file '" + path + "': not a regular file")), e.what());
      }
      const QString profile = errorOf([&] { loadProfile(path); });
      QVERIFY2(profile.contains(QString::fromStdString("profile " + path + ": not a regular file")), qPrintable(profile));
      const QString kineto = errorOf([&] { kineto::readTraceFile(path); });
      QVERIFY2(kineto.contains(QString::fromStdString(path + ": not a regular file")), qPrintable(kineto));
    }
    // Each reader's file cap is the rule's.
    const std::string big = write(dir, "big.json", "{\"traceEvents\": [" + std::string(2 * 1024 * 1024, ' ') + "]}");
    const ScopedEnv env("SHARDSCOPE_MAX_TRACE_MB", "1");
    try {
      (void)readChromeTraceFile(big);
      QFAIL("a trace over the cap was read");
    } catch (const TraceFormatError& e) {
      QVERIFY2(QString(e.what()).contains("more than the 1 MiB a trace may have (set SHARDSCOPE_MAX_TRACE_MB"), e.what());
    }
    const QString kineto = errorOf([&] { kineto::readTraceFile(big); });
    QVERIFY2(kineto.contains("SHARDSCOPE_MAX_TRACE_MB"), qPrintable(kineto));
  }

  // A .gz is small on disk: what it inflates to is capped as it streams.
  void gzipCappedOnWhatItInflatesTo() {
    const QString gzip = QStandardPaths::findExecutable(QStringLiteral("gzip"));
    if (gzip.isEmpty()) QSKIP("gzip is not installed");
    QTemporaryDir dir;
    const std::string json = write(dir, "big.json", "{\"traceEvents\": [" + std::string(3 * 1024 * 1024, ' ') + "]}");
    QProcess p;
    p.start(gzip, {QStringLiteral("-k"), QString::fromStdString(json)});
    QVERIFY(p.waitForFinished(30000) && p.exitCode() == 0);
    const std::string gz = json + ".gz";
    struct stat st {};
    QVERIFY(::stat(gz.c_str(), &st) == 0 && st.st_size < 1024 * 1024);  // under the cap on disk
    const ScopedEnv env("SHARDSCOPE_MAX_TRACE_MB", "1");
    const QString e = errorOf([&] { kineto::readTraceFile(gz); });
    QVERIFY2(e.contains("inflates to more than the") && e.contains("SHARDSCOPE_MAX_TRACE_MB"), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestInputFile)
#include "test_input_file.moc"
