// Outputs are written whole or not at all (common/output_file.h): a finished
// file replaces the old one only when complete, with no temporary file left;
// a writer that throws leaves the old file as it was; a device that refuses
// the data (/dev/full) is a RunError naming it and the reason.
#include <QtTest>

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "common/output_file.h"

using namespace shardscope;

namespace {
std::string readAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}
}  // namespace

class TestOutputFile : public QObject {
  Q_OBJECT

 private slots:
  void completeFileReplacesTheOld() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("out.json").toStdString();
    { std::ofstream(path) << "old"; }
    const std::string big(1 << 20, 'x');  // more than one buffer's worth
    writeOutputFile(path, [&](std::ostream& out) {
      QCOMPARE(readAll(path), std::string("old"));  // untouched while the new one is written
      out << big;
    });
    QCOMPARE(readAll(path), big);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"out.json"});
  }

  void aWriterThatFailsLeavesTheOldFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("out.json").toStdString();
    { std::ofstream(path) << "old"; }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeOutputFile(path, [](std::ostream& out) {
      out << "half";
      throw std::runtime_error("stopped");
    }));
    QCOMPARE(readAll(path), std::string("old"));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"out.json"});
  }

  // A symlink stays a link to the new content; an existing file keeps its mode.
  void aSymlinkAndAModeAreKept() {
    QTemporaryDir dir;
    const std::string target = dir.filePath("target.json").toStdString(), link = dir.filePath("link.json").toStdString();
    { std::ofstream(target) << "old"; }
    QVERIFY(QFile::setPermissions(QString::fromStdString(target), QFile::ReadOwner | QFile::WriteOwner));
    QVERIFY(QFile::link(QString::fromStdString(target), QString::fromStdString(link)));
    writeOutputFile(link, [](std::ostream& out) { out << "new"; });
    QVERIFY(QFileInfo(QString::fromStdString(link)).isSymLink());
    QCOMPARE(readAll(target), std::string("new"));
    struct stat st {};
    QCOMPARE(::stat(target.c_str(), &st), 0);
    QCOMPARE(st.st_mode & 0777, mode_t{0600});
  }

  void aFullDeviceIsAnErrorNamingIt() {
    if (!QFile::exists("/dev/full")) QSKIP("no /dev/full");
    try {
      writeOutputFile("/dev/full", [](std::ostream& out) { out << std::string(100000, 'x'); });
      QFAIL("/dev/full took the data");
    } catch (const RunError& e) {
      const std::string what = e.what();
      QVERIFY2(what.find("/dev/full") != std::string::npos && what.find("No space left on device") != std::string::npos,
               e.what());
    }
  }

  void aMissingDirectoryIsAnErrorNamingThePath() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("no/such/dir/out.json").toStdString();
    try {
      writeOutputFile(path, [](std::ostream& out) { out << "x"; });
      QFAIL("wrote into a missing directory");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestOutputFile)
#include "test_output_file.moc"
