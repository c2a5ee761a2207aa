// Byte-level language-model data: sample i of step s is a window of T+1 bytes of
// the corpus at an offset drawn from (seed, step, i) alone, so P ranks on slices
// of the global batch see exactly the samples one rank would. Tokens are bytes
// (0..255); the target of position t is the byte at t+1.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardscope {

class TextData {
 public:
  // Over the corpus embedded at build time (resources/text/corpus.txt).
  TextData(int seq, uint64_t seed);
  // Over any text (tests); the text must outlive this object.
  TextData(std::string_view text, int seq, uint64_t seed);

  // tokens, targets: (count, seq), samples [first, first + count) of the global batch of `step`.
  void batch(int step, int64_t first, int count, int32_t* tokens, int32_t* targets) const;
  // Offset of the window of sample `sample` of `step` (bytes into text()).
  int64_t windowOffset(int step, int64_t sample) const;

  int seq() const { return m_seq; }
  std::string_view text() const { return m_text; }
  // The embedded corpus without its header line (the line that names the source).
  static std::string_view corpus();

 private:
  std::string_view m_text;
  int m_seq;
  uint64_t m_seed;
};

}  // namespace shardscope
