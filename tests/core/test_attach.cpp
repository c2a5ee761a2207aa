// Attaching to a served run (run --serve): an inspector gets every event from
// the start of the run, whenever it attaches, and its trace is the served
// run's byte for byte (modeled clock); Pause / Step / Continue from the
// inspector stop the served run's ranks in lockstep and the inspector sees
// the same stop and ledgers; detaching leaves the run going; Stop from the
// inspector stops the run; every server (127.0.0.1 too) speaks CURVE: it
// refuses an inspector whose key is not authorized, and one without CURVE,
// and logs who it refused, while the serving user's own identity attaches to
// a loopback run with no key given; malformed messages are dropped, never fatal.
#include <QtTest>

#include <QTemporaryDir>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "attach/attach_client.h"
#include "attach/curve_keys.h"
#include "attach/run_server.h"
#include "common/errors.h"
#include "common/log.h"  // before any spdlog header
#include <spdlog/sinks/base_sink.h>
#include "engine/run.h"
#include "launch/wire_format.h"
#include "trace/chrome_trace_writer.h"

using namespace shardscope;
using Clock = std::chrono::steady_clock;

namespace {

RunConfig servedConfig(int steps = 3) {
  RunConfig c;
  c.strategy = Strategy::Zero3;
  c.ranks = 4;
  c.model.layers = 4;
  c.model.hidden = 64;  // flags can say it all (an inspector's config comes from the run's flags)
  c.batch = 8;
  c.steps = steps;
  c.clock = ClockKind::Modeled;
  return c;
}

ServeOptions loopback() {
  ServeOptions o;
  o.address = parseServeAddress("127.0.0.1:0", "--serve", true);
  return o;
}

AttachOptions attachTo(const RunServer& server) {
  AttachOptions o;
  o.address = parseServeAddress(server.endpoint(), "attach", false);
  o.name = "test inspector";
  return o;
}

QByteArray traceBytes(const Run& run, const QString& path) {
  writeChromeTraceFile(run.trace(), path.toStdString());
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Waits (bounded) until pred holds.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

// The log's lines (the server's refusals), read under the sink's own lock:
// the server's thread writes them while the test reads.
class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard lock(mutex_);
    return m_text;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    m_text.append(line.data(), line.size());
  }
  void flush_() override {}

 private:
  std::string m_text;
};

// Captures the log while alive.
struct LogCapture {
  std::shared_ptr<CaptureSink> sink = std::make_shared<CaptureSink>();
  LogCapture() { addLogSink(sink); }
  ~LogCapture() { removeLogSink(sink); }
  std::string str() { return sink->text(); }
};

}  // namespace

class TestAttach : public QObject {
  Q_OBJECT

  QTemporaryDir m_home;  // this user's CURVE identity, for servers and inspectors alike

 private slots:
  void initTestCase() { qputenv("SHARDSCOPE_CONFIG_DIR", m_home.path().toUtf8()); }

  // Loopback is no exception: a plain (no CURVE) client is refused, another
  // account's identity is refused with or without the server's key, and the
  // serving user's own identity attaches with no key given.
  void loopbackIsServedWithCurve() {
    LogCapture log;
    Run served(servedConfig(2));
    RunServer server(served, loopback());
    QVERIFY(!server.secured());  // no --server-key needed here...
    server.start();
    {  // ...yet without CURVE nothing it sends is read
      zmq::context_t context;
      zmq::socket_t plain(context, zmq::socket_type::dealer);
      plain.set(zmq::sockopt::linger, 0);
      plain.connect(server.endpoint());
      const std::vector<uint8_t> header = wireHeader(WireKind::AttachHello, -1, 0, 0);
      const std::vector<uint8_t> hello = attachHelloPayload("plain");
      plain.send(zmq::buffer(header), zmq::send_flags::sndmore);
      plain.send(zmq::buffer(hello), zmq::send_flags::none);
      zmq::pollitem_t item{plain.handle(), 0, ZMQ_POLLIN, 0};
      QCOMPARE(zmq::poll(&item, 1, std::chrono::milliseconds(700)), 0);
    }
    QVERIFY(eventually([&] { return log.str().find("refused a connection") != std::string::npos; }, std::chrono::seconds(5)));
    QTemporaryDir other_home;  // another account on the same machine
    AttachOptions other = attachTo(server);
    other.config_dir = other_home.path().toStdString();
    other.connect_timeout = std::chrono::seconds(3);
    try {
      attachToRun(other);  // its own key taken as the server's: the handshake fails
      QFAIL("another identity attached to a loopback run");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("not served under your identity") != std::string::npos ||
                   std::string(e.what()).find("no run answered") != std::string::npos,
               e.what());
    }
    other.server_key = server.publicKey();  // the right server key, but not authorized
    try {
      attachToRun(other);
      QFAIL("an unauthorized identity attached to a loopback run");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("refused this inspector") != std::string::npos, e.what());
    }
    AttachedRun attached = attachToRun(attachTo(server));  // this user: no key, no setup
    attached.run->start();
    served.start();
    RunResult result = served.wait();
    server.finish(&result, "");
    attached.run->wait();
    QCOMPARE(attached.run->losses(), result.losses);
  }

  // The 17th inspector is told the run serves 16, not left to time out as
  // if the run had gone.
  void seventeenthInspectorIsToldWhy() {
    Run served(servedConfig(2));
    ServeOptions options = loopback();
    options.end_linger = std::chrono::milliseconds(500);  // the 16 attached here never read the ending
    RunServer server(served, options);
    server.start();
    std::vector<AttachedRun> attached;
    for (int i = 0; i < RunServer::kMaxInspectors; ++i) attached.push_back(attachToRun(attachTo(server)));
    AttachOptions one_more = attachTo(server);
    one_more.connect_timeout = std::chrono::seconds(10);
    try {
      attachToRun(one_more);
      QFAIL("a 17th inspector attached");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("refused this inspector: 16 inspectors are attached to this run") !=
                   std::string::npos,
               e.what());
    }
    served.start();
    RunResult result = served.wait();
    server.finish(&result, "");
  }

  void attachedTraceIsTheServedRunsBytes() {
    Run served(servedConfig());
    RunServer server(served, loopback());
    served.gate().enable();
    server.start();
    AttachedRun attached = attachToRun(attachTo(server));
    QVERIFY(attached.steppable);
    QCOMPARE(attached.launch, std::string("threads"));
    attached.run->start();
    served.start();
    RunResult here = served.wait();
    server.finish(&here, "");
    RunResult there = attached.run->wait();
    QTemporaryDir dir;
    const QByteArray a = traceBytes(served, dir.filePath("served.json"));
    const QByteArray b = traceBytes(*attached.run, dir.filePath("attached.json"));
    QVERIFY(!a.isEmpty());
    QVERIFY2(a == b, "the attached trace differs from the served run's");
    QCOMPARE(there.losses, here.losses);
    QCOMPARE(there.ranks.size(), here.ranks.size());
    for (size_t r = 0; r < here.ranks.size(); ++r) {
      QCOMPARE(there.ranks[r].ledger.peak, here.ranks[r].ledger.peak);
      QCOMPARE(there.ranks[r].comm_bytes.all_gather, here.ranks[r].comm_bytes.all_gather);
      QCOMPARE(there.ranks[r].comm_bytes.reduce_scatter, here.ranks[r].comm_bytes.reduce_scatter);
      QCOMPARE(there.ranks[r].unit_order, here.ranks[r].unit_order);
    }
    QCOMPARE(there.final_master, here.final_master);
  }

  void lateInspectorCatchesUpFromTheStart() {
    Run served(servedConfig(4));
    RunServer server(served, loopback());
    served.gate().enable();
    served.gate().pause();  // hold it mid-run while the second inspector comes
    server.start();
    AttachedRun first = attachToRun(attachTo(server));
    first.run->start();
    served.start();
    QVERIFY(eventually([&] { return served.gate().stopped(); }));
    served.gate().step(StepMode::NextStep);
    served.gate().step(StepMode::NextStep);
    QVERIFY(eventually([&] { return served.stepsDone() >= 1 && served.gate().stopped(); }));
    const size_t published = served.eventLog(0).publishedCount();
    QVERIFY(published > 0);
    // Attaches after a step and a half: gets step 0 too.
    AttachedRun late = attachToRun(attachTo(server));
    late.run->start();
    QVERIFY(eventually([&] { return late.run->eventLog(0).publishedCount() >= published; }));
    // The first detaches: the run goes on.
    first.run->cancel();
    QVERIFY_THROWS_EXCEPTION(RunAborted, first.run->wait());
    served.gate().resume();
    RunResult here = served.wait();
    QCOMPARE(static_cast<int>(here.losses.size()), 4);
    server.finish(&here, "");
    late.run->wait();
    QTemporaryDir dir;
    QVERIFY(traceBytes(served, dir.filePath("a.json")) == traceBytes(*late.run, dir.filePath("b.json")));
  }

  void inspectorStepsTheServedRun() {
    Run served(servedConfig(2));
    RunServer server(served, loopback());
    served.gate().enable();
    server.start();
    AttachedRun attached = attachToRun(attachTo(server));
    StepControl& remote = attached.run->stepControl();
    QVERIFY(&remote == attached.gate.get());
    remote.pause();
    attached.run->start();
    served.start();
    std::vector<GatePoint> there, here;
    uint64_t there_id = 0, here_id = 0;
    QVERIFY(eventually([&] { return remote.stopped(&there, &there_id); }));
    QVERIFY(served.gate().stopped(&here, &here_id));
    QCOMPARE(there, here);
    QCOMPARE(there_id, here_id);
    for (const GatePoint& p : there) QCOMPARE(p, there.front());  // lockstep
    // The ledger the inspector gets at the stop is the engine's there (the
    // other streams may still finish a prefetch: it follows them).
    for (int r = 0; r < 4; ++r)
      QVERIFY(eventually([&] {
        const auto ledger = attached.gate->ledgerAtStop(r);
        return ledger && *ledger == served.ledger(r).current;
      }));
    // Next op: a new stop, one op on, seen by both.
    remote.step(StepMode::NextOp);
    QVERIFY(eventually([&] { return remote.stopped(&there, &there_id) && there_id != here_id; }));
    QVERIFY(served.gate().stopped(&here, &here_id));
    QCOMPARE(there, here);
    QCOMPARE(there_id, here_id);
    // Breakpoints set remotely stop the served run there.
    remote.setBreakpoints({EventKind::OptimizerStep}, {});
    remote.resume();
    QVERIFY(eventually([&] {
      return remote.stopped(&there, &there_id) && there_id != here_id && there.front().kind == EventKind::OptimizerStep;
    }));
    remote.setBreakpoints({}, {});
    remote.resume();
    RunResult result = served.wait();
    server.finish(&result, "");
    attached.run->wait();
    QCOMPARE(attached.run->losses(), result.losses);
  }

  void inspectorStopsTheRun() {
    Run served(servedConfig(50));
    RunServer server(served, loopback());
    served.gate().enable();
    server.start();
    AttachedRun attached = attachToRun(attachTo(server));
    attached.run->start();
    served.start();
    QVERIFY(eventually([&] { return served.stepsDone() >= 1; }));
    attached.gate->pause();  // held, so the stop lands before the last step
    QVERIFY(eventually([&] { return attached.gate->stopped(); }));
    attached.gate->stopRun();
    QVERIFY_THROWS_EXCEPTION(RunAborted, served.wait());
    QCOMPARE(server.stoppedBy(), std::string("'test inspector'"));
    RunResult so_far = served.resultSoFar();
    server.finish(&so_far, "");
    QVERIFY_THROWS_EXCEPTION(RunAborted, attached.run->wait());  // the served run ended early
    QVERIFY(attached.run->stepsDone() >= 1);
  }

  void servedFailureReachesTheInspector() {
    Run served(servedConfig(2));
    RunServer server(served, loopback());
    server.start();
    AttachedRun attached = attachToRun(attachTo(server));
    attached.run->start();
    server.finish(nullptr, "rank 2 hung in all_gather");
    try {
      attached.run->wait();
      QFAIL("an attached run whose served run failed must fail");
    } catch (const RunError& e) {
      QCOMPARE(std::string(e.what()), std::string("rank 2 hung in all_gather"));
    }
  }

  void nothingServedThereIsOneClearError() {
    AttachOptions o;
    o.address = parseServeAddress("127.0.0.1:1", "attach", false);
    o.connect_timeout = std::chrono::milliseconds(300);
    try {
      attachToRun(o);
      QFAIL("attaching where nothing is served must fail");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("no run answered at tcp://127.0.0.1:1") != std::string::npos, e.what());
    }
  }

  void securedServerRefusesStrangers() {
    QTemporaryDir server_home, client_home, stranger_home;
    LogCapture log;
    const auto level = logLevel();
    setLogLevel(spdlog::level::info);  // acceptances are info lines
    const auto restore = qScopeGuard([level] { setLogLevel(level); });
    Run served(servedConfig(2));
    ServeOptions options;
    options.address = parseServeAddress("127.0.0.2:0", "--serve", true);
    QVERIFY(options.address.secured);
    options.config_dir = server_home.path().toStdString();
    // The client's key is authorized; the stranger's is not.
    const CurveKeyPair client = loadOrMakeIdentity(client_home.path().toStdString());
    QVERIFY(authorizeKey(options.config_dir, client.public_key, "laptop"));
    QVERIFY(!authorizeKey(options.config_dir, client.public_key, "laptop"));  // once
    RunServer server(served, options);
    QVERIFY(server.secured());
    QCOMPARE(server.authorizedKeys(), size_t{1});
    // The identity file is its owner's alone.
    QFileInfo identity(server_home.filePath("curve/identity"));
    QCOMPARE(identity.permissions() & (QFile::ReadGroup | QFile::ReadOther | QFile::WriteGroup | QFile::WriteOther),
             QFileDevice::Permissions());
    served.gate().enable();
    server.start();

    AttachOptions stranger;
    stranger.address = parseServeAddress(server.endpoint(), "attach", false);
    stranger.server_key = server.publicKey();
    stranger.config_dir = stranger_home.path().toStdString();
    stranger.connect_timeout = std::chrono::seconds(5);
    try {
      attachToRun(stranger);
      QFAIL("an unauthorized key must be refused");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("refused this inspector") != std::string::npos, e.what());
    }
    const std::string stranger_key = loadOrMakeIdentity(stranger.config_dir).public_key;
    QVERIFY(eventually([&] { return log.str().find("refused an inspector at 127.0.0.1: its key " + stranger_key) != std::string::npos; },
                       std::chrono::seconds(5)));

    // Without CURVE at all: the handshake fails, nothing it sends is read.
    {
      zmq::context_t context;
      zmq::socket_t plain(context, zmq::socket_type::dealer);
      plain.set(zmq::sockopt::linger, 0);
      plain.connect(server.endpoint());
      const std::vector<uint8_t> header = wireHeader(WireKind::AttachHello, -1, 0, 0);
      const std::vector<uint8_t> hello = attachHelloPayload("plain");
      plain.send(zmq::buffer(header), zmq::send_flags::sndmore);
      plain.send(zmq::buffer(hello), zmq::send_flags::none);
      zmq::pollitem_t item{plain.handle(), 0, ZMQ_POLLIN, 0};
      QCOMPARE(zmq::poll(&item, 1, std::chrono::milliseconds(700)), 0);
    }
    QVERIFY(eventually([&] { return log.str().find("refused a connection") != std::string::npos; }, std::chrono::seconds(5)));

    // The authorized inspector gets the run.
    AttachOptions friendly = stranger;
    friendly.config_dir = client_home.path().toStdString();
    AttachedRun attached = attachToRun(friendly);
    attached.run->start();
    served.start();
    RunResult result = served.wait();
    server.finish(&result, "");
    attached.run->wait();
    QCOMPARE(attached.run->losses(), result.losses);
    QVERIFY(log.str().find("accepted an inspector at 127.0.0.1 (key " + client.public_key + ", laptop)") != std::string::npos);
  }

  void malformedMessagesAreDropped() {
    LogCapture log;
    Run served(servedConfig(2));
    RunServer server(served, loopback());
    server.start();
    zmq::context_t context;
    zmq::socket_t rogue(context, zmq::socket_type::dealer);
    rogue.set(zmq::sockopt::linger, 0);
    // An authorized identity (this user's) that sends garbage once in.
    const CurveKeyPair me = loadOrMakeIdentity(shardscopeConfigDir());
    rogue.set(zmq::sockopt::curve_serverkey, server.publicKey());
    rogue.set(zmq::sockopt::curve_publickey, me.public_key);
    rogue.set(zmq::sockopt::curve_secretkey, me.secret_key);
    rogue.connect(server.endpoint());
    // One part; a bad magic; a command before hello; a hello of another protocol.
    rogue.send(zmq::str_buffer("x"), zmq::send_flags::none);
    std::vector<uint8_t> bad = wireHeader(WireKind::AttachHello, -1, 0, 0);
    bad[0] ^= 0xff;
    rogue.send(zmq::buffer(bad), zmq::send_flags::sndmore);
    rogue.send(zmq::str_buffer("...."), zmq::send_flags::none);
    StepCommand stop{StepCommandOp::Stop};
    const std::vector<uint8_t> command = commandPayload(stop);
    rogue.send(zmq::buffer(wireHeader(WireKind::Command, -1, 0, 0)), zmq::send_flags::sndmore);
    rogue.send(zmq::buffer(command), zmq::send_flags::none);
    std::vector<uint8_t> hello = attachHelloPayload("old");
    hello[0] = 99;
    rogue.send(zmq::buffer(wireHeader(WireKind::AttachHello, -1, 0, 0)), zmq::send_flags::sndmore);
    rogue.send(zmq::buffer(hello), zmq::send_flags::none);
    // Too big for an inspector's message: ZeroMQ drops the connection.
    std::vector<uint8_t> huge(RunServer::kMaxInbound + 1);
    rogue.send(zmq::buffer(wireHeader(WireKind::Bye, -1, 0, 0)), zmq::send_flags::sndmore);
    rogue.send(zmq::buffer(huge), zmq::send_flags::none);
    QVERIFY(eventually([&] {
      const std::string t = log.str();
      return t.find("a message must have two parts, it had 1") != std::string::npos &&
             t.find("magic is not ShardScope's") != std::string::npos &&
             t.find("run id belongs to another run") != std::string::npos &&
             t.find("attach protocol 99") != std::string::npos;
    }, std::chrono::seconds(5)));
    // The server still serves, and the rogue stopped nothing.
    AttachedRun attached = attachToRun(attachTo(server));
    attached.run->start();
    served.start();
    RunResult result = served.wait();
    QVERIFY(server.stoppedBy().empty());
    server.finish(&result, "");
    attached.run->wait();
    QCOMPARE(attached.run->losses(), result.losses);
  }

  void serveAddressForms() {
    QCOMPARE(parseServeAddress("7070", "--serve", true).endpoint(), std::string("tcp://127.0.0.1:7070"));
    QVERIFY(!parseServeAddress("localhost:7070", "--serve", true).secured);
    QVERIFY(parseServeAddress("127.0.0.2:7070", "--serve", true).secured);
    QCOMPARE(parseServeAddress("0.0.0.0:0", "--serve", true).endpoint(), std::string("tcp://*:0"));
    QVERIFY(parseServeAddress("tcp://10.0.0.5:1", "attach", false).secured);
    for (const char* bad : {"", "x", "host:", ":7070", "1.2.3.4:70000", "tcp://7070", "a b:1"}) {
      try {
        parseServeAddress(bad, "--serve", true);
        QFAIL(qPrintable(QString("accepted '%1'").arg(bad)));
      } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).rfind("--serve must be PORT, HOST:PORT or tcp://HOST:PORT", 0) == 0, e.what());
      }
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseServeAddress("127.0.0.1:0", "attach ADDR", false));
    QVERIFY_THROWS_EXCEPTION(ConfigError, parseServeAddress("*:7070", "attach ADDR", false));
  }

  void keyFiles() {
    QTemporaryDir home;
    const std::filesystem::path dir = home.path().toStdString();
    bool made = false;
    const CurveKeyPair a = loadOrMakeIdentity(dir, &made);
    QVERIFY(made);
    QVERIFY(isCurveKey(a.public_key) && isCurveKey(a.secret_key));
    const CurveKeyPair b = loadOrMakeIdentity(dir, &made);
    QVERIFY(!made);
    QCOMPARE(b.public_key, a.public_key);
    // Readable by others: refused, naming the file and the fix.
    std::filesystem::permissions(dir / "curve" / "identity", std::filesystem::perms::group_read,
                                 std::filesystem::perm_options::add);
    try {
      loadOrMakeIdentity(dir);
      QFAIL("a shared identity must be refused");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("is readable by others (mode 0640)") != std::string::npos, e.what());
    }
    // A bad authorized_keys line names the file and line.
    {
      std::ofstream keys(authorizedKeysPath(dir));
      keys << "# comment\n" << a.public_key << " me\nnot-a-key\n";
    }
    try {
      loadAuthorizedKeys(dir);
      QFAIL("a bad key line must be refused");
    } catch (const RunError& e) {
      QVERIFY2(std::string(e.what()).find("authorized_keys:3: a line must start with a public key") != std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ConfigError, authorizeKey(dir, "short", ""));
  }
};

QTEST_GUILESS_MAIN(TestAttach)
#include "test_attach.moc"
