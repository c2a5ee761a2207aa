// The category rules: fragments of a frame's function name or file name. Kept
// in one table so docs/postmortem.md and the code say the same thing.
#include "postmortem/frame_category.h"

namespace shardscope::postmortem {

namespace {

struct CategoryRule {
  SnapshotCategory category;
  const char* in_name;  // a fragment of the function name, or nullptr
  const char* in_file;  // a fragment of the file name, or nullptr (both given: both must match)
};

// Order within the table does not matter: FrameClassifier::result tries the
// categories in the order Optimizer, Grad, Gathered, Activation.
constexpr CategoryRule kCategoryRules[] = {
    // Optimizer state: Adam's moments and the step that creates them lazily.
    {SnapshotCategory::Optimizer, "exp_avg", nullptr},  // exp_avg and exp_avg_sq
    {SnapshotCategory::Optimizer, "_init_group", "optim"},
    {SnapshotCategory::Optimizer, "step", "torch/optim/"},
    {SnapshotCategory::Optimizer, "adam", "torch/optim/"},
    // Gradients: reduce-scatter / all-reduce of grads, FSDP's post-backward, grad accumulation.
    {SnapshotCategory::Grad, "reduce_scatter", nullptr},
    {SnapshotCategory::Grad, "foreach_reduce", nullptr},
    {SnapshotCategory::Grad, "post_backward", nullptr},
    {SnapshotCategory::Grad, "reduce_grad", nullptr},
    {SnapshotCategory::Grad, "AccumulateGrad", nullptr},
    {SnapshotCategory::Grad, "accumulate_grad", nullptr},
    // Gathered parameters: FSDP's all-gather of a unit's shards (unshard).
    {SnapshotCategory::Gathered, "all_gather", nullptr},
    {SnapshotCategory::Gathered, "allgather", nullptr},
    {SnapshotCategory::Gathered, "unshard", nullptr},
    // Activations: tensors made inside a module's forward (and not in backward).
    {SnapshotCategory::Activation, "forward", nullptr},
    {SnapshotCategory::Activation, "_call_impl", nullptr},
};

bool containsText(std::string_view hay, const char* needle) {
  return needle == nullptr || hay.find(needle) != std::string_view::npos;
}

}  // namespace

std::string_view snapshotCategoryKey(SnapshotCategory c) {
  switch (c) {
    case SnapshotCategory::Gathered: return "gathered";
    case SnapshotCategory::Grad: return "grad";
    case SnapshotCategory::Optimizer: return "optimizer";
    case SnapshotCategory::Activation: return "activation";
    case SnapshotCategory::Other: return "other";
  }
  return "other";
}

std::string_view snapshotCategoryLabel(SnapshotCategory c) {
  switch (c) {
    case SnapshotCategory::Gathered: return "gathered params";
    case SnapshotCategory::Grad: return "gradients";
    case SnapshotCategory::Optimizer: return "optimizer state";
    case SnapshotCategory::Activation: return "activations";
    case SnapshotCategory::Other: return "other";
  }
  return "other";
}

void FrameClassifier::add(const FrameText& f) {
  ++m_frames;
  // Autograd's engine runs backward; a "forward" frame below it is a recompute
  // or a hook, not an activation saved by forward.
  if (f.name.find("backward") != std::string_view::npos || f.filename.find("torch/autograd/") != std::string_view::npos)
    m_backward = true;
  for (const CategoryRule& r : kCategoryRules) {
    if (m_hit[static_cast<size_t>(r.category)]) continue;
    if (containsText(f.name, r.in_name) && containsText(f.filename, r.in_file))
      m_hit[static_cast<size_t>(r.category)] = true;
  }
}

SnapshotCategory FrameClassifier::result() const {
  constexpr SnapshotCategory kOrder[] = {SnapshotCategory::Optimizer, SnapshotCategory::Grad, SnapshotCategory::Gathered,
                                         SnapshotCategory::Activation};
  for (const SnapshotCategory cat : kOrder) {
    if (!m_hit[static_cast<size_t>(cat)]) continue;
    if (cat == SnapshotCategory::Activation && m_backward) continue;
    return cat;
  }
  return SnapshotCategory::Other;
}

bool memoryVizShowsFrame(const FrameText& f) {
  static constexpr std::string_view kOmittedNames[] = {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
                                                       "_start", "__libc_start_main", "PyEval_", "PyObject_",
                                                       "PyFunction_"};
  static constexpr std::string_view kOmittedFiles[] = {"core/boxing", "/Register", "/Redispatch", "pythonrun.c",
                                                       "Modules/main.c", "Objects/call.c", "Objects/methodobject.c",
                                                       "pycore_ceval.h", "ceval.c", "cpython/abstract.h"};
  for (std::string_view n : kOmittedNames)
    if (f.name.find(n) != std::string_view::npos) return false;
  for (std::string_view n : kOmittedFiles)
    if (f.filename.find(n) != std::string_view::npos) return false;
  return true;
}

bool isPythonFrame(const FrameText& f) {
  return f.filename.size() > 3 && f.filename.compare(f.filename.size() - 3, 3, ".py") == 0;
}

}  // namespace shardscope::postmortem
