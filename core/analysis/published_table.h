// The table `shardscope-cli validate` reads: published training runs, each
// with its machine, model shape, parallel layout, batch, recompute and the
// figures the paper reports (resources/validation/published.json; the format
// is docs/validation.md's). Reading is strict: every bad field is one
// ConfigError naming the row, the field and what it allows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/kinds.h"
#include "config/model_presets.h"

namespace shardscope {

enum class PublishedFlops { Megatron, SixN };  // how a tflops_per_gpu figure counts FLOPs

struct PublishedRow {
  std::string name;
  std::string source;
  std::string machine;  // a hardware profile's name
  std::string dtype;    // "bf16" or "fp16" (priced alike)
  // The transformer's table; model.name is the row's name.
  ModelPreset model;
  Attention attention = Attention::Flash;
  bool dropout = false;
  bool fp32_grads = false;  // "grad_dtype": "fp32": Megatron-LM's fp32 main_grad (18 bytes/param)
  struct Parallel {
    int gpus = 1, tp = 1, pp = 1, dp = 1, cp = 1;
    bool sp = false;
    std::string schedule;  // "gpipe", "1f1b", "interleaved" ("" when pp = 1 gives none)
    int virtual_stages = 1;
    Strategy data_parallel = Strategy::Ddp;
  } parallel;
  int global_batch = 1, micro_batch = 1;
  Checkpointing recompute = Checkpointing::None;
  struct Published {
    std::optional<double> iteration_s;
    std::optional<double> tflops_per_gpu;
    PublishedFlops flops = PublishedFlops::Megatron;
    std::optional<double> param_opt_gib;    // per GPU: parameters, gradients and optimizer state
    std::optional<double> activations_gib;  // per GPU: the activation peak
    // Which GPU param_opt describes: the most-loaded rank (false), or a
    // pipeline stage holding transformer layers only ("param_opt_rank":
    // "interior_stage"), as a paper that counts 18 bytes × the layers'
    // parameters per stage, without the embedding or the head.
    bool param_opt_interior = false;
  } published;
};

// `file` names the table in errors.
std::vector<PublishedRow> parsePublishedTable(const std::string& json_text, const std::string& file);
std::vector<PublishedRow> loadPublishedTable(const std::string& path);
// resources/validation/published.json ($SHARDSCOPE_RESOURCES/validation when set).
std::string defaultPublishedTablePath();

}  // namespace shardscope
