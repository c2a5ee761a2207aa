// Traces written before the run description became typed still open: every
// file in tests/data/golden/ reads back into a RunTrace with its config, and
// writing that RunTrace again gives the file's exact bytes (events, metadata
// and the config, which now goes JSON -> RunConfig -> JSON).
#include <QtTest>

#include <QDir>
#include <sstream>

#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"

class TestGoldenTraceReopen : public QObject {
  Q_OBJECT

 private slots:
  void reopensAndRewritesByteForByte_data() {
    QTest::addColumn<QString>("path");
    const QDir dir(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/golden"));
    const QStringList files = dir.entryList({QStringLiteral("*.trace.json")}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 8);
    for (const QString& f : files) QTest::newRow(qPrintable(f)) << dir.filePath(f);
  }

  void reopensAndRewritesByteForByte() {
    QFETCH(QString, path);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray want = file.readAll();
    const shardscope::RunTrace trace = shardscope::readChromeTraceFile(path.toStdString());
    QVERIFY2(trace.config.has_value(), "the recorded config did not read back");
    QCOMPARE(static_cast<int>(trace.events.size()), trace.ranks);
    std::ostringstream out;
    shardscope::writeChromeTrace(trace, out);
    const std::string got = out.str();
    if (got == want.toStdString()) return;
    size_t at = 0;
    while (at < got.size() && at < static_cast<size_t>(want.size()) && got[at] == want[static_cast<qsizetype>(at)]) ++at;
    const size_t from = at > 60 ? at - 60 : 0;
    QFAIL(qPrintable(QStringLiteral("rewritten trace differs at byte %1\n  file:      …%2…\n  rewritten: …%3…")
                         .arg(at)
                         .arg(QString::fromUtf8(want.mid(static_cast<qsizetype>(from), 120)))
                         .arg(QString::fromStdString(got.substr(from, 120)))));
  }
};

QTEST_GUILESS_MAIN(TestGoldenTraceReopen)
#include "test_golden_trace_reopen.moc"
