// The one place that maps ModelShape::kind to an implementation; strategies and
// tests build models only through these two functions.
#include "model/model.h"

#include <stdexcept>
#include <string>

#include "model/gpt_model.h"
#include "model/meta_model.h"
#include "model/mlp_model.h"

namespace shardscope {

std::unique_ptr<Model> makeModel(const ModelSpec& spec, MemoryLedger& ledger, int local_batch, uint64_t seed) {
  if (ledger.meta()) return std::make_unique<MetaModel>(spec, ledger, local_batch, seed);
  switch (spec.shape().kind) {
    case ModelKind::Mlp: return std::make_unique<MlpModel>(spec, ledger, local_batch, seed);
    case ModelKind::Gpt: return std::make_unique<GptModel>(spec, ledger, local_batch, seed);
  }
  throw std::invalid_argument("makeModel: unknown model kind " +
                              std::to_string(static_cast<int>(spec.shape().kind)));
}

namespace {
[[noreturn]] void noPipelinePath() {
  throw std::logic_error("this model has no pipeline-stage boundary (pipelines run the CPU and meta models)");
}
}  // namespace

size_t Model::boundaryElements() const { noPipelinePath(); }
void Model::setStageInput(const float*) { noPipelinePath(); }
void Model::takeStageOutput(float*) { noPipelinePath(); }
void Model::setStageOutputGrad(const float*) { noPipelinePath(); }
void Model::takeStageInputGrad(float*) { noPipelinePath(); }

void initModelParams(const ModelSpec& spec, uint64_t seed, float* master) {
  switch (spec.shape().kind) {
    case ModelKind::Mlp: MlpModel::initParams(spec, seed, master); return;
    case ModelKind::Gpt: GptModel::initParams(spec, seed, master); return;
  }
  throw std::invalid_argument("initModelParams: unknown model kind " +
                              std::to_string(static_cast<int>(spec.shape().kind)));
}

}  // namespace shardscope
