#include "config/kinds.h"

#include <utility>

namespace shardscope {

namespace {

// The one name table of each kind.
template <class E>
using Names = std::vector<std::pair<E, const char*>>;

const Names<Strategy>& strategyTable() {
  static const Names<Strategy> t = {{Strategy::Ddp, "ddp"},     {Strategy::Zero1, "zero1"}, {Strategy::Zero2, "zero2"},
                                    {Strategy::Zero3, "zero3"}, {Strategy::Fsdp, "fsdp"},   {Strategy::Hsdp, "hsdp"}};
  return t;
}
const Names<Backend>& backendTable() {
  static const Names<Backend> t = {{Backend::Cpu, "cpu"},
                                   {Backend::Meta, "meta"},
                                   {Backend::Cuda, "cuda"},
                                   {Backend::CudaEmulated, "cuda-emulated"}};
  return t;
}
const Names<ClockKind>& clockTable() {
  static const Names<ClockKind> t = {{ClockKind::Measured, "measured"}, {ClockKind::Modeled, "modeled"}};
  return t;
}
const Names<Launch>& launchTable() {
  static const Names<Launch> t = {{Launch::Threads, "threads"}, {Launch::Processes, "processes"}, {Launch::Env, "env"}};
  return t;
}
const Names<Prefetch>& prefetchTable() {
  static const Names<Prefetch> t = {{Prefetch::None, "none"},
                                    {Prefetch::Forward, "forward"},
                                    {Prefetch::Backward, "backward"},
                                    {Prefetch::Both, "both"}};
  return t;
}
const Names<ModelKind>& modelKindTable() {
  static const Names<ModelKind> t = {{ModelKind::Mlp, "mlp"}, {ModelKind::Gpt, "gpt"}};
  return t;
}
const Names<Attention>& attentionTable() {
  static const Names<Attention> t = {{Attention::Naive, "naive"}, {Attention::Flash, "flash"}};
  return t;
}
const Names<Checkpointing>& checkpointingTable() {
  static const Names<Checkpointing> t = {
      {Checkpointing::None, "none"}, {Checkpointing::Selective, "selective"}, {Checkpointing::Full, "full"}};
  return t;
}
const Names<Wrap>& wrapTable() {
  static const Names<Wrap> t = {{Wrap::Block, "block"}, {Wrap::Linear, "linear"}};
  return t;
}
const Names<CommDType>& commDTypeTable() {
  static const Names<CommDType> t = {{CommDType::Bf16, "bf16"}, {CommDType::Fp32, "fp32"}};
  return t;
}
const Names<PipelineSchedule>& pipelineScheduleTable() {
  static const Names<PipelineSchedule> t = {
      {PipelineSchedule::GPipe, "gpipe"}, {PipelineSchedule::OneFOneB, "1f1b"}, {PipelineSchedule::Interleaved, "interleaved"}};
  return t;
}
const Names<BreakOp>& breakOpTable() {
  static const Names<BreakOp> t = {
      {BreakOp::Forward, "forward"},  {BreakOp::Backward, "backward"},     {BreakOp::OptimizerStep, "optimizer_step"},
      {BreakOp::Free, "free"},        {BreakOp::AllGather, "all_gather"},  {BreakOp::ReduceScatter, "reduce_scatter"}};
  return t;
}

template <class E>
std::string nameIn(const Names<E>& t, E v) {
  for (const auto& [value, name] : t)
    if (value == v) return name;
  return "?";
}

template <class E>
std::optional<E> valueIn(const Names<E>& t, std::string_view name) {
  for (const auto& [value, n] : t)
    if (name == n) return value;
  return std::nullopt;
}

template <class E>
std::vector<std::string> namesIn(const Names<E>& t) {
  std::vector<std::string> out;
  for (const auto& entry : t) out.emplace_back(entry.second);
  return out;
}

template <class E>
std::vector<E> valuesIn(const Names<E>& t) {
  std::vector<E> out;
  for (const auto& entry : t) out.push_back(entry.first);
  return out;
}

}  // namespace

const std::vector<Strategy>& allStrategies() {
  static const std::vector<Strategy> v = valuesIn(strategyTable());
  return v;
}
const std::vector<Backend>& allBackends() {
  static const std::vector<Backend> v = valuesIn(backendTable());
  return v;
}

std::string strategyName(Strategy s) { return nameIn(strategyTable(), s); }
std::string backendName(Backend b) { return nameIn(backendTable(), b); }
std::string clockName(ClockKind c) { return nameIn(clockTable(), c); }
std::string launchName(Launch l) { return nameIn(launchTable(), l); }
std::string prefetchName(Prefetch p) { return nameIn(prefetchTable(), p); }
std::string modelKindName(ModelKind m) { return nameIn(modelKindTable(), m); }
std::string breakOpName(BreakOp op) { return nameIn(breakOpTable(), op); }
std::string attentionName(Attention a) { return nameIn(attentionTable(), a); }
std::string checkpointingName(Checkpointing c) { return nameIn(checkpointingTable(), c); }
std::string wrapName(Wrap w) { return nameIn(wrapTable(), w); }
std::string commDTypeName(CommDType d) { return nameIn(commDTypeTable(), d); }
std::string pipelineScheduleName(PipelineSchedule s) { return nameIn(pipelineScheduleTable(), s); }

std::optional<Strategy> parseStrategy(std::string_view n) { return valueIn(strategyTable(), n); }
std::optional<Backend> parseBackend(std::string_view n) { return valueIn(backendTable(), n); }
std::optional<ClockKind> parseClock(std::string_view n) { return valueIn(clockTable(), n); }
std::optional<Launch> parseLaunch(std::string_view n) { return valueIn(launchTable(), n); }
std::optional<Prefetch> parsePrefetch(std::string_view n) { return valueIn(prefetchTable(), n); }
std::optional<ModelKind> parseModelKind(std::string_view n) { return valueIn(modelKindTable(), n); }
std::optional<BreakOp> parseBreakOp(std::string_view n) { return valueIn(breakOpTable(), n); }
std::optional<Attention> parseAttention(std::string_view n) { return valueIn(attentionTable(), n); }
std::optional<Checkpointing> parseCheckpointing(std::string_view n) { return valueIn(checkpointingTable(), n); }
std::optional<Wrap> parseWrap(std::string_view n) { return valueIn(wrapTable(), n); }
std::optional<CommDType> parseCommDType(std::string_view n) { return valueIn(commDTypeTable(), n); }
std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view n) { return valueIn(pipelineScheduleTable(), n); }

std::vector<std::string> strategyNames() { return namesIn(strategyTable()); }
std::vector<std::string> backendNames() { return namesIn(backendTable()); }
std::vector<std::string> clockNames() { return namesIn(clockTable()); }
std::vector<std::string> launchNames() { return namesIn(launchTable()); }
std::vector<std::string> prefetchNames() { return namesIn(prefetchTable()); }
std::vector<std::string> breakOpNames() { return namesIn(breakOpTable()); }
std::vector<std::string> attentionNames() { return namesIn(attentionTable()); }
std::vector<std::string> checkpointingNames() { return namesIn(checkpointingTable()); }
std::vector<std::string> wrapNames() { return namesIn(wrapTable()); }
std::vector<std::string> commDTypeNames() { return namesIn(commDTypeTable()); }
std::vector<std::string> pipelineScheduleNames() { return namesIn(pipelineScheduleTable()); }

bool isSharded(Strategy s) { return s == Strategy::Zero3 || s == Strategy::Fsdp || s == Strategy::Hsdp; }
bool usesBuckets(Strategy s) { return !isSharded(s); }
bool isHybrid(Strategy s) { return s == Strategy::Hsdp; }
int zeroStage(Strategy s) {
  switch (s) {
    case Strategy::Ddp: return 0;
    case Strategy::Zero1: return 1;
    case Strategy::Zero2: return 2;
    case Strategy::Zero3:
    case Strategy::Fsdp:
    case Strategy::Hsdp: return 3;
  }
  return 0;
}
bool reducesByAllReduce(Strategy s) { return s == Strategy::Ddp; }

bool isGpuBackend(Backend b) { return b == Backend::Cuda || b == Backend::CudaEmulated; }

}  // namespace shardscope
