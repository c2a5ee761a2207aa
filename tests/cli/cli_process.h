// Runs the real shardscope-cli as a user would and keeps what it printed; the
// cli tests share it. A run past its timeout is killed and reads "timed out".
#pragma once

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QString>
#include <QStringList>

struct CliResult {
  int exit_code = -1;  // -1 when it crashed or timed out
  QString out, err;
};

inline CliResult runProcess(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                            int timeout_ms = 120000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  CliResult r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

inline CliResult runCli(const QStringList& args, const QProcessEnvironment& env, int timeout_ms = 120000) {
  return runProcess(SHARDSCOPE_CLI_PATH, args, env, timeout_ms);
}

inline CliResult runCli(const QStringList& args, int timeout_ms = 120000) {
  return runCli(args, QProcessEnvironment::systemEnvironment(), timeout_ms);
}

inline QByteArray readFileBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A summary without its wall times (top level and per rank): what two runs of
// one config must agree on.
inline QJsonObject summaryWithoutWallTime(const QString& path) {
  QJsonObject s = QJsonDocument::fromJson(readFileBytes(path)).object();
  s.remove("wall_seconds");
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!it->isObject()) continue;
    QJsonObject o = it->toObject();
    o.remove("wall_seconds");
    *it = o;
  }
  return s;
}

// Starts the CLI and waits (bounded) until `pattern` appears on one of its
// channels; `seen` keeps what it printed there. Returns the match.
inline QRegularExpressionMatch startAndWaitFor(QProcess& p, const QStringList& args, const QRegularExpression& pattern,
                                               QByteArray& seen, QProcess::ProcessChannel channel,
                                               int timeout_ms = 60000) {
  p.start(SHARDSCOPE_CLI_PATH, args);
  QElapsedTimer timer;
  timer.start();
  while (timer.elapsed() < timeout_ms) {
    p.waitForReadyRead(100);
    seen += channel == QProcess::StandardError ? p.readAllStandardError() : p.readAllStandardOutput();
    const QRegularExpressionMatch m = pattern.match(QString::fromUtf8(seen));
    if (m.hasMatch()) return m;
    if (p.state() == QProcess::NotRunning) break;
  }
  return {};
}
