#include "kineto/trace_file.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <vector>

#include <simdjson.h>
#if SHARDSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>

#include "common/units.h"
#endif

#include "common/errors.h"
#include "common/input_file.h"

namespace shardscope::kineto {

namespace {

std::string gib(uint64_t bytes) { return bytesText(static_cast<double>(bytes), 2, ByteUnit::GiB); }

struct File {
  std::FILE* f = nullptr;
  File() = default;
  explicit File(std::FILE* file) : f(file) {}
  File(File&& o) noexcept : f(o.f) { o.f = nullptr; }
  File& operator=(File&&) = delete;
  ~File() {
    if (f) std::fclose(f);
  }
};

// Plain pages, not advised for huge ones: with THP's usual "madvise" defrag
// a huge-page fault compacts memory first, and after reading a large trace
// (the page cache full of it) that stalled: a 1 GB .gz inflated in 3.4 s
// advised against 1.8 s not (2-vCPU VM, 2026-12-04).
// An allocation that fails says so, and how much it wanted: never a bare
// std::bad_alloc, never a JSON error further on.
void allocate(PaddedBuffer& b, size_t capacity, const std::string& path) {
  // Not zero-filled: the file or the inflater writes every byte, and finish() zeroes the padding.
  const size_t bytes = capacity + simdjson::SIMDJSON_PADDING;
  if (b.data && b.allocated >= bytes) {  // a reused buffer that is large enough
    b.capacity = capacity;
    return;
  }
  std::shared_ptr<char[]> grown;
  try {
    grown = std::make_unique_for_overwrite<char[]>(bytes);
  } catch (const std::bad_alloc&) {
    throw ResourceError(path + ": out of memory: reading it needs a buffer of " + inputSizeText(bytes) + " (" +
                        std::to_string(bytes) + " bytes) for its JSON, more than this process can get (free memory, "
                        "or its limit: ulimit -v)");
  }
  if (b.size) std::memcpy(grown.get(), b.data.get(), b.size);
  b.data = std::move(grown);
  b.allocated = bytes;
  b.capacity = capacity;
}

void finish(PaddedBuffer& b) {
  std::memset(b.data.get() + b.size, 0, b.capacity + simdjson::SIMDJSON_PADDING - b.size);
  b.capacity = b.size + simdjson::SIMDJSON_PADDING;
}

// Why a size is capped, for messages: simdjson's limit, or the file rule's (which the user can raise).
std::string capReason(uint64_t max_bytes) {
  if (max_bytes >= kMaxTraceBytes) return "simdjson takes documents below 4 GiB";
  if (max_bytes == traceFileRule().max_bytes) return traceFileRule().cap_hint;
  return "the importer's cap";
}


// A .gz whose JSON grows past the cap: refused as the buffer reaches it, so
// a small file (a gzip bomb) never takes more memory than the cap. The cap
// of a .gz is also relative to its size (gzipRatioCap): a 5 MB bomb is
// refused at 1.25 GiB, not at the 4 GiB a trace may be.
[[noreturn]] void inflatesPastCap(const std::string& path, uint64_t max_bytes, uint64_t file_size) {
  if (max_bytes == gzipRatioCap(file_size))
    throw ConfigError(path + ": this .gz inflates past " + wholeMiBText(max_bytes) + ", more than " +
                      std::to_string(gzipMaxRatio()) + " times its " + std::to_string(file_size) +
                      " bytes (a .gz may inflate to " + std::to_string(gzipMaxRatio()) + " times its size, at least " +
                      wholeMiBText(kGzipRatioFloor) + "): a gzip bomb, or data far more repetitive than a trace; set " +
                      kGzipRatioVariable + " (up to 1032) to allow more");
  throw ConfigError(path + ": inflates to more than the limit (" + gib(max_bytes) + "; " + capReason(max_bytes) + ")");
}

// Deflate's best ratio (a 258-byte match in about 2 bits): no gzip member
// inflates to more than this times its compressed size, whatever its trailer says.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct OpenedTrace {
  File file;
  uint64_t size = 0;       // on disk
  uint64_t max_bytes = 0;  // of JSON, inflated or not
  bool gz = false;
};

OpenedTrace openTrace(const std::string& path, uint64_t max_bytes) {
  // The rule every reader shares: regular files only (a FIFO or /dev/zero
  // would never end), at most SHARDSCOPE_MAX_TRACE_MB; the inflated JSON of a
  // .gz is capped the same, as it streams.
  InputFileRule rule = traceFileRule();
  rule.what = "PyTorch trace";
  OpenedTrace t;
  t.file.f = openInputFile(path, rule);
  t.max_bytes = std::min({max_bytes, rule.max_bytes, kMaxTraceBytes});
  struct stat st{};
  if (::fstat(fileno(t.file.f), &st) != 0) throw ConfigError(path + ": cannot open: " + std::strerror(errno));
  t.size = static_cast<uint64_t>(st.st_size);
  // Sniff the gzip magic rather than trust the name.
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, t.file.f);
  std::rewind(t.file.f);
  t.gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!t.gz && isGzipPath(path)) throw ConfigError(path + ": named .gz but is not gzip data (no 1f 8b header)");
  return t;
}

void checkPlainSize(const std::string& path, uint64_t file_size, uint64_t max_bytes) {
  if (file_size > max_bytes)
    throw ConfigError(path + ": " + std::to_string(file_size) + " bytes of JSON, more than the " + gib(max_bytes) +
                      " cap (" + capReason(max_bytes) + ")");
}

PaddedBuffer readPlain(const std::string& path, std::FILE* f, uint64_t file_size, uint64_t max_bytes, PaddedBuffer b) {
  checkPlainSize(path, file_size, max_bytes);
  allocate(b, file_size, path);
  b.size = std::fread(b.data.get(), 1, file_size, f);
  if (b.size != file_size) throw ConfigError(path + ": read " + std::to_string(b.size) + " of " +
                                             std::to_string(file_size) + " bytes: " + std::strerror(errno));
  finish(b);
  return b;
}

PaddedBuffer readGzip(const std::string& path, std::FILE* f, uint64_t file_size, uint64_t max_bytes, PaddedBuffer b) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw ConfigError(path + ": cannot start zlib");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  // The gzip trailer's size is mod 2^32; start from 4x the compressed size and grow.
  allocate(b, std::min<uint64_t>(max_bytes, std::max<uint64_t>(file_size * 4, 1 << 16)), path);
  std::vector<unsigned char> in(1 << 20);
  uint64_t consumed = 0;
  int rc = Z_OK;
  bool member_done = false, out_full = false;
  for (;;) {
    if (z.avail_in == 0) {
      const size_t n = std::fread(in.data(), 1, in.size(), f);
      if (n == 0 && (!out_full || member_done)) break;  // else inflate still holds output
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(n);
      consumed += n;
    }
    if (member_done) {  // concatenated gzip members form one stream
      inflateReset(&z);
      member_done = false;
    }
    if (b.size == b.capacity) {
      if (b.capacity >= max_bytes) inflatesPastCap(path, max_bytes, file_size);
      allocate(b, std::min<uint64_t>(max_bytes, b.capacity * 2), path);
    }
    z.next_out = reinterpret_cast<Bytef*>(b.data.get() + b.size);
    const size_t room = std::min<size_t>(b.capacity - b.size, 1u << 30);
    z.avail_out = static_cast<uInt>(room);
    rc = inflate(&z, Z_NO_FLUSH);
    b.size += room - z.avail_out;
    out_full = z.avail_out == 0;
    if (rc == Z_STREAM_END) {
      member_done = true;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw ConfigError(path + ": corrupt gzip data near compressed byte " +
                        std::to_string(consumed - z.avail_in) + " (" + (z.msg ? z.msg : "zlib error") + ")");
  }
  if (std::ferror(f)) throw ConfigError(path + ": read error: " + std::strerror(errno));
  if (!member_done)
    throw ConfigError(path + ": truncated gzip file: the stream ends after " + std::to_string(consumed) +
                      " compressed bytes (" + std::to_string(b.size) +
                      " bytes inflated) without its end marker");
  if (b.capacity - b.size < 1) allocate(b, b.size + 1, path);
  finish(b);
  return b;
}

#if SHARDSCOPE_HAVE_LIBDEFLATE
// The whole .gz in memory, each gzip member inflated at once into the output,
// which starts at the size the last member's trailer gives (exact for one
// member below 4 GiB) and doubles up to the cap. false on data libdeflate
// rejects: zlib's stream then re-reads the file to say what is wrong
// (truncated after N bytes, corrupt near byte N), which libdeflate cannot.
bool inflateWhole(const std::string& path, std::FILE* f, uint64_t file_size, uint64_t max_bytes, PaddedBuffer& b) {
  constexpr size_t kMinMember = 18;  // 10-byte header, an empty deflate block, 8-byte trailer
  if (file_size < kMinMember) return false;
  const auto compressed = std::make_unique_for_overwrite<char[]>(file_size);  // fread writes it all
  const std::span<const unsigned char> in(reinterpret_cast<const unsigned char*>(compressed.get()), file_size);
  if (std::fread(compressed.get(), 1, file_size, f) != file_size) return false;
  const uint64_t trailer_size = uint64_t(in[in.size() - 4]) | uint64_t(in[in.size() - 3]) << 8 |
                                uint64_t(in[in.size() - 2]) << 16 | uint64_t(in[in.size() - 1]) << 24;
  // One byte more than the trailer says: the byte after the JSON must be in
  // capacity (below), and an exact fit would be copied whole to grow by one.
  // The trailer is the file's word only (a truncated file's last bytes are
  // data): never more than deflate can inflate the file to; the buffer then
  // grows as the data needs, up to the cap.
  const uint64_t believable = std::min(trailer_size + 1, file_size * kMaxDeflateRatio + 1);
  allocate(b, std::min<uint64_t>(max_bytes, std::max<uint64_t>(believable, 1 << 16)), path);
  struct Decompressor {
    libdeflate_decompressor* d = libdeflate_alloc_decompressor();
    ~Decompressor() {
      if (d) libdeflate_free_decompressor(d);
    }
  } dec;
  if (!dec.d) return false;
  size_t pos = 0;
  while (pos < in.size()) {
    size_t used_in = 0, produced = 0;
    const libdeflate_result rc = libdeflate_gzip_decompress_ex(dec.d, in.data() + pos, in.size() - pos,
                                                               b.data.get() + b.size, b.capacity - b.size,
                                                               &used_in, &produced);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
      if (b.capacity >= max_bytes) inflatesPastCap(path, max_bytes, file_size);
      allocate(b, std::min<uint64_t>(max_bytes, b.capacity * 2), path);
      continue;  // the same member again, into the larger buffer
    }
    if (rc != LIBDEFLATE_SUCCESS) return false;
    b.size += produced;
    pos += used_in;
  }
  if (b.capacity - b.size < 1) allocate(b, b.size + 1, path);
  finish(b);
  return true;
}
#endif

}  // namespace

bool haveLibdeflate() {
#if SHARDSCOPE_HAVE_LIBDEFLATE
  return true;
#else
  return false;
#endif
}

uint64_t gzipMaxRatio() {
  const char* v = std::getenv(kGzipRatioVariable);
  if (v == nullptr || *v == 0) return kDefaultGzipRatio;
  char* end = nullptr;
  errno = 0;
  const unsigned long long r = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != 0 || r < 1 || r > kMaxDeflateRatio || *v == '-' || *v == '+')
    throw ConfigError(std::string(kGzipRatioVariable) + " must be a whole number from 1 to 1032 (how many times its "
                      "size a .gz may inflate to), got '" + v + "'");
  return r;
}

uint64_t gzipRatioCap(uint64_t compressed_bytes) {
  const uint64_t ratio = gzipMaxRatio();
  if (compressed_bytes > ~uint64_t{0} / ratio) return ~uint64_t{0};
  return std::max(kGzipRatioFloor, ratio * compressed_bytes);
}

bool isGzipPath(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

namespace {

// An empty file (or one of only white space) is said to be empty, not
// described by what the JSON walk expected of its first byte.
PaddedBuffer traceFileRefuseEmpty(const std::string& path, bool gz, PaddedBuffer b) {
  for (size_t i = 0; i < b.size; ++i) {
    const char c = b.data.get()[i];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return b;
  }
  if (gz)
    throw ConfigError(path + ": is empty after decompression (its gzip data inflates to " + std::to_string(b.size) +
                      " bytes, no JSON); a PyTorch trace is one JSON object");
  throw ConfigError(path + ": is empty (" + std::to_string(b.size) +
                    " bytes, no JSON); a PyTorch trace is one JSON object");
}

}  // namespace

PaddedBuffer readTraceFile(const std::string& path, uint64_t max_bytes, GzipInflater inflater, PaddedBuffer reuse) {
  reuse.size = 0;
  reuse.capacity = 0;
  OpenedTrace opened = openTrace(path, max_bytes);
  File& file = opened.file;
  const uint64_t size = opened.size;
  const bool gz = opened.gz;
  max_bytes = opened.max_bytes;
  if (!gz) return traceFileRefuseEmpty(path, false, readPlain(path, file.f, size, max_bytes, std::move(reuse)));
  max_bytes = std::min(max_bytes, gzipRatioCap(size));
#if SHARDSCOPE_HAVE_LIBDEFLATE
  if (inflater == GzipInflater::Fastest) {
    if (inflateWhole(path, file.f, size, max_bytes, reuse)) return traceFileRefuseEmpty(path, true, std::move(reuse));
    reuse.size = 0;
    reuse.capacity = 0;
    std::rewind(file.f);
  }
#else
  (void)inflater;
#endif
  return traceFileRefuseEmpty(path, true, readGzip(path, file.f, size, max_bytes, std::move(reuse)));
}

}  // namespace shardscope::kineto

namespace shardscope::kineto {

TraceFileReader::TraceFileReader(const std::string& path, uint64_t max_bytes) : m_path(path) {
  OpenedTrace t = openTrace(path, max_bytes);
  if (!t.gz) checkPlainSize(path, t.size, t.max_bytes);
  m_size = t.size;
  m_gzip = t.gz;
  m_f = t.file.f;
  t.file.f = nullptr;
}

TraceFileReader::~TraceFileReader() {
  if (m_f) std::fclose(m_f);
}

size_t TraceFileReader::read(char* to, size_t max) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(max, m_size - m_read));
  const size_t n = want ? std::fread(to, 1, want, m_f) : 0;
  if (n < want && std::ferror(m_f))
    throw ConfigError(m_path + ": read " + std::to_string(m_read + n) + " of " + std::to_string(m_size) +
                      " bytes: " + std::strerror(errno));
  m_read += n;
  return n;
}

size_t TraceFileReader::readAt(char* to, size_t max, uint64_t offset) const {
  size_t done = 0;
  while (done < max && offset + done < m_size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(max - done, m_size - offset - done));
    const ssize_t n = ::pread(fileno(m_f), to + done, want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw ConfigError(m_path + ": read at byte " + std::to_string(offset + done) + " of " + std::to_string(m_size) +
                        ": " + std::strerror(errno));
    if (n == 0) break;  // the file shrank: the walk then finds the document cut short
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace shardscope::kineto
