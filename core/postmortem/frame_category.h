// Which ledger category a PyTorch allocation belongs to, read from the stack
// frames the memory snapshot recorded for it. The rules are a short table of
// name/file fragments (docs/postmortem.md lists them); an allocation no rule
// claims is "other", and that share is reported, not hidden. Also which frames
// a reader is shown: those PyTorch's memory_viz shows (the unwinder's own left out).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace shardscope::postmortem {

// The ledger's categories as a snapshot's stacks can tell them apart.
enum class SnapshotCategory : uint8_t { Gathered, Grad, Optimizer, Activation, Other };
inline constexpr int kSnapshotCategoryCount = 5;

// "gathered", "grad", "optimizer", "activation", "other": the JSON keys.
std::string_view snapshotCategoryKey(SnapshotCategory c);
// "gathered params", "gradients", "optimizer state", "activations", "other": for text.
std::string_view snapshotCategoryLabel(SnapshotCategory c);

struct FrameText {
  std::string_view filename;
  std::string_view name;
};

// Whether PyTorch's memory_viz shows a frame (torch/cuda/_memory_viz.py
// _frame_filter): false for the unwinder and interpreter frames it omits
// ("unwind::unwind", "CapturedTraceback::gather", "PyEval_", ceval.c, ...).
bool memoryVizShowsFrame(const FrameText& f);
// A Python source frame (a file name ending in ".py"): the user's code.
bool isPythonFrame(const FrameText& f);

// Classifies one stack, given frame by frame (innermost first) through
// `next` (returns false when the stack has no more frames). The first rule,
// in the order Optimizer, Grad, Gathered, Activation, that any frame matches wins.
class FrameClassifier {
 public:
  void add(const FrameText& f);                   // one frame of the stack
  SnapshotCategory result() const;
  bool anyFrame() const { return m_frames > 0; }

 private:
  std::array<bool, kSnapshotCategoryCount> m_hit{};
  bool m_backward = false;
  int m_frames = 0;
};

}  // namespace shardscope::postmortem
