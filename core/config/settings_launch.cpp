// Settings rows: where the ranks run (threads or processes, nodes, the
// rendezvous), live serving to inspectors, and the output files. None is part
// of the config JSON or of runArgs: a processes run's trace is byte for byte
// a threads run's, and workers get the run's flags without them.
#include <algorithm>

#include "common/errors.h"
#include "config/rendezvous_url.h"
#include "config/serve_address.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

void nodesRule(const RunConfig& c) {
  if (c.nnodes == 1 && !c.nproc_per_node && c.node_rank == 0) return;
  if (c.launch == Launch::Env)
    throw ConfigError("--nnodes, --node-rank and --nproc-per-node do not apply to --launch env: the launcher that "
                      "started this process places it (its rank and world size are in the environment)");
  if (c.launch != Launch::Processes)
    throw ConfigError("--nnodes, --node-rank and --nproc-per-node place rank processes: they need --launch processes");
  if (c.nnodes * c.procsPerNode() != c.ranks)
    throw ConfigError("--nnodes " + std::to_string(c.nnodes) + " x --nproc-per-node " +
                      std::to_string(c.procsPerNode()) + " must equal --ranks " + std::to_string(c.ranks));
  if (c.nnodes > 1 && c.rdzv.empty())
    throw ConfigError("--nnodes " + std::to_string(c.nnodes) +
                      " needs --rdzv file://DIR (a shared file system) or redis://HOST:PORT, where the nodes meet");
}

Text nonEmpty(const std::string& v) { return v.empty() ? Text() : Text(v); }

const Setting kLaunchRows[] = {
    {
        .flag = "--launch", .type = SettingType::Choice, .metavar = "HOW", .default_text = "threads",
        .help = "threads (every rank a thread of this process), processes (one worker process per rank, as "
                "torchrun starts them, streaming their events here; same results) or env (this process is one rank "
                "that torchrun, mpirun or srun started: rank and world size from their environment, meeting the "
                "others at --rdzv; rank 0 writes the trace and summary)",
        .choices = launchNames,
        // cuda-emulated passes the mask so its rule below can say why it cannot.
        .applies = {.backends = bit(Backend::Cpu) | bit(Backend::Cuda) | bit(Backend::CudaEmulated)},
        .applies_text = "--backend cpu (Gloo between processes) or cuda (NCCL, one GPU per rank process); meta runs "
                        "its ranks as threads",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.launch = choose(s, v, parseLaunch); },
        .text = [](const RunConfig& c) -> Text { return launchName(c.launch); },
        .given = [](const RunConfig& c) { return c.launch != Launch::Threads; },
        .rule = [](const RunConfig& c) {
          if (c.launch == Launch::Env && c.rdzv.empty())
            throw ConfigError("--launch env needs --rdzv, a store every rank reaches: file://DIR on a file system "
                              "every rank shares, or redis://HOST:PORT");
          if (c.launch == Launch::Env && c.backend == Backend::CudaEmulated)
            throw ConfigError("--launch env does not apply to --backend cuda-emulated: it emulates all its ranks "
                              "on GPU 0 inside one process; use --backend cuda (one GPU per rank process)");
          if (c.launch == Launch::Processes && c.backend == Backend::CudaEmulated)
            throw ConfigError("--launch processes does not apply to --backend cuda-emulated: it emulates all its "
                              "ranks on GPU 0 inside one process, so they cannot be processes; use --launch threads, "
                              "or --backend cuda --launch processes (one GPU per rank process)");
        },
    },
    {
        .flag = "--nnodes", .metavar = "N", .default_text = "1",
        .help = "machines the run spans (--launch processes), each starting --nproc-per-node of the ranks",
        .range = {1, 4096}, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.nnodes = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.nnodes); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.nnodes; },
        .rule = nodesRule,
    },
    {
        .flag = "--node-rank", .metavar = "R", .default_text = "0",
        .help = "this machine's place among the --nnodes (0 writes the trace and summary)",
        .range_for = [](const RunConfig& c, std::string& hint) {
          hint = " (the --nnodes " + std::to_string(c.nnodes) + " machines)";
          return Range{0, static_cast<double>(std::max(0, c.nnodes - 1))};
        },
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.node_rank = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.node_rank); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.node_rank; },
    },
    {
        .flag = "--nproc-per-node", .metavar = "K", .default_text = "ranks/nnodes",
        .help = "rank processes this machine starts: ranks node_rank*K .. node_rank*K+K-1",
        .range = {1, 4096}, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.nproc_per_node = parseInt32(s.flag, v);
        },
        .text = [](const RunConfig& c) { return c.nproc_per_node ? num(*c.nproc_per_node) : Text(); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.nproc_per_node; },
    },
    {
        .flag = "--rdzv", .type = SettingType::Text, .metavar = "URL",
        .help = "where the rank processes meet: file://DIR (Gloo's FileStore: one host or a shared file system) or "
                "redis://HOST:PORT (Gloo's RedisStore) [a fresh directory on this host]",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          parseRendezvousUrl(v, s.flag);
          c.rdzv = v;
        },
        .text = [](const RunConfig& c) { return nonEmpty(c.rdzv); },
        .rule = [](const RunConfig& c) {
          if (!c.rdzv.empty() && c.launch == Launch::Threads)
            throw ConfigError("--rdzv is where rank processes meet: it needs --launch processes or env");
        },
    },
    {
        .flag = "--rdzv-id", .type = SettingType::Text, .metavar = "ID", .default_text = "shardscope",
        .help = "the run's name in the --rdzv store: the same on every node, new for every run (a job id)",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          if (v.empty() || v.size() > 128 || v.find_first_of("/ \t\n") != std::string::npos)
            throw ConfigError(std::string(s.flag) + " must be 1..128 characters without '/' or spaces, got '" + v +
                              "'");
          c.rdzv_id = v;
        },
        .text = [](const RunConfig& c) -> Text { return c.rdzv_id; },
    },
    {
        .flag = "--rdzv-timeout", .metavar = "S", .default_text = "300",
        .help = "seconds each rank waits at --rdzv for the others (node 0's collector, then every rank's "
                "connection); a rank missing by then is named and the run ends",
        .range = {1, 86400}, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.rdzv_timeout_s = parseInt32(s.flag, v);
        },
        .text = [](const RunConfig& c) { return num(c.rdzv_timeout_s); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.rdzv_timeout_s; },
    },
    {
        .flag = "--node-addr", .type = SettingType::Text, .metavar = "ADDR", .default_text = "127.0.0.1",
        .help = "this machine's address as the other nodes reach it (its ranks listen there; node 0's collector too)",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          if (v.empty() || v.find_first_of(" /:") != std::string::npos)
            throw ConfigError(std::string(s.flag) + " must be a host name or IPv4 address, got '" + v + "'");
          c.node_addr = v;
        },
        .text = [](const RunConfig& c) -> Text { return c.node_addr; },
    },
    {
        .flag = "--serve", .type = SettingType::Text, .metavar = "ADDR",
        .help = "let inspectors attach to the live run (shardscope --attach ADDR, shardscope-cli attach ADDR): PORT, "
                "HOST:PORT (port 0: any free one); every address is served with CURVE keys (shardscope-cli keys), and "
                "on 127.0.0.1 your own key needs no setup",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          (void)parseServeAddress(v, s.flag, true);
          c.serve = v;
        },
        .text = [](const RunConfig& c) { return nonEmpty(c.serve); },
        .given = [](const RunConfig& c) { return !c.serve.empty(); },
        .rule = [](const RunConfig& c) {
          if (!c.serve.empty() && c.node_rank > 0)
            throw ConfigError("--serve belongs on node 0 (--node-rank 0): it collects every node's ranks");
        },
    },
    {
        .flag = "--serve-wait", .metavar = "S", .default_text = "0",
        .help = "with --serve: hold the ranks until the first inspector attaches, at most S seconds (0: start at "
                "once; inspectors catch up from the start either way)",
        .range = {0, 86400}, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.serve_wait_s = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.serve_wait_s); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.serve_wait_s; },
        .given = [](const RunConfig& c) { return c.serve_wait_s != 0; },
        .rule = [](const RunConfig& c) {
          if (c.serve_wait_s != 0 && c.serve.empty())
            throw ConfigError("--serve-wait needs --serve ADDR (where inspectors attach)");
        },
    },
    {
        .flag = "--trace", .type = SettingType::Text, .metavar = "FILE", .help = "write a Chrome/Perfetto trace (JSON)",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.trace_path = outputPath(s, v); },
        .text = [](const RunConfig& c) { return nonEmpty(c.trace_path); },
    },
    {
        .flag = "--summary", .type = SettingType::Text, .metavar = "FILE", .help = "write the run summary (JSON)",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.summary_path = outputPath(s, v); },
        .text = [](const RunConfig& c) { return nonEmpty(c.summary_path); },
    },
    {
        .flag = "--flight-recorder", .type = SettingType::Text, .metavar = "DIR",
        .help = "when the run ends (hung, failed, stopped or complete), write each rank's recent collectives "
                "into DIR as PyTorch flight-recorder dumps (nccl_trace_rank_<r>; open with analyze DIR or shardscope --open DIR)",
        .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.flight_recorder_dir = outputPath(s, v); },
        .text = [](const RunConfig& c) { return nonEmpty(c.flight_recorder_dir); },
    },
};

}  // namespace

std::span<const Setting> launchRows() { return kLaunchRows; }

}  // namespace shardscope::rows
