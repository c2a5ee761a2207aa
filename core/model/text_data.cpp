// Byte windows of the corpus (see text_data.h). The corpus bytes come from a file
// CMake generates at configure time, so no path is needed at run time.
#include "model/text_data.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/random.h"

// Generated from resources/text/corpus.txt by core/CMakeLists.txt.
namespace shardscope::generated {
extern const unsigned char kCorpusBytes[];
extern const std::size_t kCorpusSize;
}  // namespace shardscope::generated

namespace shardscope {

namespace {
constexpr uint64_t kWindowStream = 0x7e47;
}

std::string_view TextData::corpus() {
  std::string_view all(reinterpret_cast<const char*>(generated::kCorpusBytes), generated::kCorpusSize);
  if (all.starts_with('#')) {
    const size_t eol = all.find('\n');
    all = eol == std::string_view::npos ? std::string_view() : all.substr(eol + 1);
  }
  return all;
}

TextData::TextData(int seq, uint64_t seed) : TextData(corpus(), seq, seed) {}

TextData::TextData(std::string_view text, int seq, uint64_t seed) : m_text(text), m_seq(seq), m_seed(seed) {
  if (seq <= 0) throw std::invalid_argument("TextData: seq = " + std::to_string(seq) + " must be > 0");
  if (static_cast<int64_t>(text.size()) < static_cast<int64_t>(seq) + 1) {
    throw std::invalid_argument("TextData: the text has " + std::to_string(text.size()) +
                                " bytes, fewer than seq + 1 = " + std::to_string(seq + 1) +
                                " (one window of inputs plus the next byte); use a shorter --seq");
  }
}

int64_t TextData::windowOffset(int step, int64_t sample) const {
  const int64_t windows = static_cast<int64_t>(m_text.size()) - m_seq;  // starts 0..size-seq-1
  const uint64_t stream = kWindowStream ^ (static_cast<uint64_t>(step) << 32);
  const double u = uniform01(m_seed, stream, static_cast<uint64_t>(sample));
  return std::min(windows - 1, static_cast<int64_t>(u * static_cast<double>(windows)));
}

void TextData::batch(int step, int64_t first, int count, int32_t* tokens, int32_t* targets) const {
  for (int s = 0; s < count; ++s) {
    const int64_t offset = windowOffset(step, first + s);
    const auto* bytes = reinterpret_cast<const unsigned char*>(m_text.data()) + offset;
    int32_t* tok = tokens + static_cast<size_t>(s) * m_seq;
    int32_t* tgt = targets + static_cast<size_t>(s) * m_seq;
    for (int t = 0; t < m_seq; ++t) {
      tok[t] = bytes[t];
      tgt[t] = bytes[t + 1];
    }
  }
}

}  // namespace shardscope
