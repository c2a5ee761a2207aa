// runArgs is parseRunArgs' inverse: every flag the CLI takes comes back out
// with the same meaning, so a trace's recorded flags rerun the same
// experiment, and the command line quotes what a shell would split.
#include <QtTest>

#include "analysis/run_summary.h"
#include "config/run_config.h"
#include "common/errors.h"
#include "common/json_tree.h"

using namespace shardscope;

namespace {

RunConfig parse(std::vector<std::string> args) { return parseRunArgs(args); }

void expectRoundTrip(const RunConfig& c) {
  const std::vector<std::string> args = runArgs(c);
  const RunConfig back = parseRunArgs(args);
  QCOMPARE(runArgs(back), args);
  QCOMPARE(configJson(back), configJson(c));
  QCOMPARE(back.strategy, c.strategy);
  QCOMPARE(back.ranks, c.ranks);
  QCOMPARE(back.lr, c.lr);  // exactly: the shortest text that reads back the same double
  QCOMPARE(back.bucket_mb, c.bucket_mb);
  QCOMPARE(back.seed, c.seed);
  QCOMPARE(back.backend, c.backend);
  QCOMPARE(back.clock, c.clock);
  QCOMPARE(back.model.preset, c.model.preset);
  QCOMPARE(back.model.layers, c.model.layers);
  QCOMPARE(back.model.hidden, c.model.hidden);
  QCOMPARE(back.unit_blocks, c.unit_blocks);
  QCOMPARE(back.prefetch, c.prefetch);
  QCOMPARE(back.reshard_after_forward, c.reshard_after_forward);
  QCOMPARE(back.shard_group, c.shard_group);
  QCOMPARE(back.inject_branch.has_value(), c.inject_branch.has_value());
  QCOMPARE(back.break_on, c.break_on);
  QCOMPARE(back.break_units, c.break_units);
  QCOMPARE(back.model.attention, c.model.attention);
  QCOMPARE(back.model.checkpointing, c.model.checkpointing);
}

// Parsing `args` fails with a message that contains `needle`.
void expectRefused(const std::vector<std::string>& args, const char* needle) {
  try {
    parseRunArgs(args);
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
    return;
  }
  QFAIL("accepted");
}

}  // namespace

class TestRunArgs : public QObject {
  Q_OBJECT
 private slots:
  void everyFlagRoundTrips() {
    expectRoundTrip(RunConfig{});
    expectRoundTrip(parse({"--strategy", "zero3", "--ranks", "4", "--layers", "6", "--hidden", "96", "--batch", "8",
                           "--steps", "3", "--lr", "0.00033", "--seed", "12345678901", "--unit-blocks", "2",
                           "--prefetch", "forward", "--reshard-after-forward", "off", "--clock", "modeled",
                           "--profile", "cluster-25gbe", "--break-on", "backward", "--break-unit", "2",
                           "--timeout-ms", "4321"}));
    expectRoundTrip(parse({"--strategy", "hsdp", "--ranks", "8", "--shard-group", "4", "--model", "gpt", "--heads",
                           "4", "--seq", "32", "--vocab", "256", "--hidden", "64", "--batch", "16"}));
    expectRoundTrip(parse({"--strategy", "ddp", "--ranks", "2", "--bucket-mb", "0.1", "--first-bucket-mb", "0.03",
                           "--inject-branch", "1:0", "--layers", "3"}));
    expectRoundTrip(parse({"--backend", "meta", "--model", "llama2-70b", "--strategy", "zero3", "--ranks", "512",
                           "--batch", "512"}));
    expectRoundTrip(parse({"--model", "gpt", "--attention", "naive", "--activation-checkpointing", "selective",
                           "--ranks", "2", "--tp", "2"}));
    expectRoundTrip(parse({"--activation-checkpointing", "full", "--backend", "meta", "--model", "llama2-7b",
                           "--ranks", "8", "--batch", "8"}));
    const RunConfig off = parse({"--backend", "meta", "--ranks", "64", "--batch", "64", "--replicate", "off"});
    expectRoundTrip(off);
    QCOMPARE(parseRunArgs(runArgs(off)).replicate, false);
  }

  void configJsonCarriesTheFlags() {
    const RunConfig c = parse({"--backend", "meta", "--model", "gpt2-124m", "--strategy", "fsdp", "--ranks", "8",
                               "--batch", "16", "--unit-blocks", "4"});
    const Json json = Json::parse(configJson(c));
    const auto member = [&json](const char* key) -> const Json& {
      const auto v = json.find(key);
      if (v == json.end()) qFatal("config_json lacks \"%s\"", key);
      return *v;
    };
    QCOMPARE(member("backend").get<std::string>(), std::string("meta"));
    QCOMPARE(member("model_preset").get<std::string>(), std::string("gpt2-124m"));
    std::vector<std::string> args;
    for (const Json& a : member("args")) args.push_back(a.get<std::string>());
    QCOMPARE(runArgs(parseRunArgs(args)), runArgs(c));
    QVERIFY(member("command").get<std::string>().rfind("shardscope-cli run --model gpt2-124m ", 0) == 0);
  }

  // GPT runs default to flash attention without checkpointing; a published
  // shape keeps the activation flags given before it; the MLP refuses both.
  void activationFlags() {
    const RunConfig gpt = parse({"--model", "gpt"});
    QCOMPARE(gpt.model.attention, Attention::Flash);
    QCOMPARE(gpt.model.checkpointing, Checkpointing::None);
    QVERIFY(runArgs(gpt) == runArgs(parse({"--model", "gpt", "--attention", "flash"})));
    const Json json = Json::parse(configJson(gpt));
    QCOMPARE(json.at("attention").get<std::string>(), std::string("flash"));
    QCOMPARE(json.at("activation_checkpointing").get<std::string>(), std::string("none"));
    QVERIFY(!Json::parse(configJson(RunConfig{})).contains("attention"));  // the MLP has no attention
    const RunConfig kept = parse({"--attention", "naive", "--activation-checkpointing", "full", "--backend", "meta",
                                  "--model", "llama2-7b", "--ranks", "8", "--batch", "8"});
    QCOMPARE(kept.model.attention, Attention::Naive);
    QCOMPARE(kept.model.checkpointing, Checkpointing::Full);
    expectRefused({"--model", "gpt", "--attention", "sparse"}, "--attention must be naive or flash, got 'sparse'");
    expectRefused({"--model", "gpt", "--activation-checkpointing", "half"},
            "--activation-checkpointing must be none, selective or full, got 'half'");
    expectRefused({"--attention", "naive"}, "--attention applies to --model gpt only, not mlp");
    expectRefused({"--activation-checkpointing", "full"}, "--activation-checkpointing applies to --model gpt only");
  }

  // --launch processes takes cpu (Gloo) and cuda (NCCL, one GPU per rank
  // process); cuda-emulated and meta run their ranks as threads, and say so.
  void launchProcessesBackends() {
    const RunConfig cuda = parse({"--backend", "cuda", "--launch", "processes", "--ranks", "2"});
    QCOMPARE(cuda.backend, Backend::Cuda);
    QCOMPARE(cuda.launch, Launch::Processes);
    const RunConfig nodes = parse({"--backend", "cuda", "--launch", "processes", "--ranks", "4", "--nnodes", "2",
                                   "--rdzv", "file:///tmp/rdzv"});
    QCOMPARE(nodes.procsPerNode(), 2);
    QCOMPARE(parse({"--launch", "processes"}).launch, Launch::Processes);
    expectRefused({"--backend", "cuda-emulated", "--launch", "processes"},
            "--launch processes does not apply to --backend cuda-emulated: it emulates all its ranks on GPU 0 inside "
            "one process, so they cannot be processes; use --launch threads");
    expectRefused({"--backend", "meta", "--launch", "processes"},
            "--launch applies to --backend cpu (Gloo between processes) or cuda (NCCL, one GPU per rank process)");
    // Threads stay the default for every backend.
    QCOMPARE(parse({"--backend", "cuda-emulated", "--ranks", "4"}).launch, Launch::Threads);
  }

  void commandLineQuotesPaths() {
    RunConfig c;
    c.clock = ClockKind::Modeled;
    c.profile = "/home/me/my profiles/a100.json";
    const std::string line = runCommandLine(c);
    QVERIFY2(line.find("--profile '/home/me/my profiles/a100.json'") != std::string::npos, line.c_str());
  }
};

QTEST_APPLESS_MAIN(TestRunArgs)
#include "test_run_args.moc"
