// A run's CURVE keys as its workers get them (launch/run_keys.h): a file only
// their user can read. A file others could read or write, a link, another
// user's file, or one without a valid key pair is refused with its path.
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <fstream>

#include "common/errors.h"
#include "launch/run_keys.h"

using namespace shardscope;

namespace {
QString refusal(const std::string& file) {
  try {
    readRunKeysFile(file);
  } catch (const RunError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}
}  // namespace

class TestRunKeys : public QObject {
  Q_OBJECT

 private slots:
  void aWorkersCopyRoundTripsWithoutTheServerSecret() {
    QTemporaryDir dir;
    const RunKeys keys = makeRunKeys();
    QVERIFY(keys.server_public != keys.client_public);
    const std::string file = dir.filePath("run-keys").toStdString();
    writePrivateFile(file, workerKeysText(keys));
    struct stat st {};
    QCOMPARE(::stat(file.c_str(), &st), 0);
    QCOMPARE(st.st_mode & 0777, 0600u);
    const RunKeys back = readRunKeysFile(file);
    QCOMPARE(back.server_public, keys.server_public);
    QCOMPARE(back.client_public, keys.client_public);
    QCOMPARE(back.client_secret, keys.client_secret);
    QVERIFY(back.server_secret.empty());
    QVERIFY(workerKeysText(keys).find(keys.server_secret) == std::string::npos);
    // A second write to the same path (a planted file) is refused.
    QVERIFY_THROWS_EXCEPTION(RunError, writePrivateFile(file, "x"));
  }

  void filesOthersCouldReadOrWriteAreRefused() {
    QTemporaryDir dir;
    const std::string file = dir.filePath("run-keys").toStdString();
    writePrivateFile(file, workerKeysText(makeRunKeys()));
    QCOMPARE(::chmod(file.c_str(), 0644), 0);
    QVERIFY2(refusal(file).contains("readable or writable by others"), qPrintable(refusal(file)));
    QCOMPARE(::chmod(file.c_str(), 0600), 0);
    const std::string link = dir.filePath("link").toStdString();
    QCOMPARE(::symlink(file.c_str(), link.c_str()), 0);
    QVERIFY2(refusal(link).contains(QString::fromStdString(link)), qPrintable(refusal(link)));
    QVERIFY(refusal(dir.filePath("none").toStdString()).contains("cannot read the run's keys"));
  }

  void badKeysAreRefusedNamingTheLine() {
    const RunKeys keys = makeRunKeys();
    QVERIFY_THROWS_EXCEPTION(RunError, parseWorkerKeys("server-public " + keys.server_public + "\n", "f"));
    try {
      parseWorkerKeys("server-public short\nclient-public " + keys.client_public + "\nclient-secret " +
                          keys.client_secret + "\n",
                      "f");
      QFAIL("accepted");
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("'server-public' is not a CURVE key"), e.what());
    }
    // A client key that is not its secret's (two runs' halves mixed).
    const RunKeys other = makeRunKeys();
    try {
      parseWorkerKeys("server-public " + keys.server_public + "\nclient-public " + other.client_public +
                          "\nclient-secret " + keys.client_secret + "\n",
                      "f");
      QFAIL("accepted");
    } catch (const RunError& e) {
      QVERIFY2(QString(e.what()).contains("client-public is not client-secret's public key"), e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestRunKeys)
#include "test_run_keys.moc"
