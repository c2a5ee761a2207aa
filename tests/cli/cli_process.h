// Runs the real shardscope-cli as a user would and keeps what it printed; the
// cli tests share it. A run past its timeout is killed and reads "timed out".
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

struct CliResult {
  int exit_code = -1;  // -1 when it crashed or timed out
  QString out, err;
};

inline CliResult runCli(const QStringList& args, const QProcessEnvironment& env, int timeout_ms = 120000) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(SHARDSCOPE_CLI_PATH, args);
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

inline CliResult runCli(const QStringList& args, int timeout_ms = 120000) {
  return runCli(args, QProcessEnvironment::systemEnvironment(), timeout_ms);
}
