#include "common/output_file.h"
#include "common/output_names.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <streambuf>
#include <utility>
#include <vector>

#include "common/errors.h"

namespace shardscope {

namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& path, const std::string& reason) {
  throw ConfigError(flag + " " + path + ": " + reason);
}

std::string parentOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A zero-byte write changes nothing, yet a device that takes no data (/dev/full) refuses it.
void probeWrite(int fd, const std::string& flag, const std::string& path) {
  const char nothing = 0;
  if (::write(fd, &nothing, 0) < 0) {
    const int error = errno;
    ::close(fd);
    refuse(flag, path, std::string("cannot be written: ") + std::strerror(error));
  }
  ::close(fd);
}

// A FIFO's write end, opened by the check while its reader was there and kept
// until the output is written: closing it would end the reader's input (EOF).
std::mutex g_outputFifoMutex;
std::map<std::string, int> g_outputFifos;  // path -> fd, under g_outputFifoMutex

// Opens a FIFO for writing without waiting for a reader (a blocking open would
// wait forever, and a stop signal would only restart it): ENXIO when none has
// it open. The descriptor is then made blocking for the writes.
int openOutputFifo(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

constexpr const char* kOutputFifoNoReader =
    "is a FIFO that no process has open for reading; an output is written to a FIFO only while its reader is "
    "there (start the reader first), or give a regular file";

}  // namespace

void checkOutputFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ConfigError(flag + " needs a file name, got ''");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse(flag, path, "is a directory; give a file name (e.g. " + path + "/out.json)");
    if (S_ISSOCK(st.st_mode))
      refuse(flag, path, "is a socket, not a regular file; give a file (or a FIFO with its reader running)");
    if (S_ISFIFO(st.st_mode)) {
      std::lock_guard lock(g_outputFifoMutex);
      if (g_outputFifos.count(path) != 0) return;
      const int fd = openOutputFifo(path);
      if (fd < 0) refuse(flag, path, errno == ENXIO ? kOutputFifoNoReader : std::string("cannot be written: ") + std::strerror(errno));
      g_outputFifos[path] = fd;  // kept open for the write: see g_outputFifos
      return;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) refuse(flag, path, std::string("cannot be written: ") + std::strerror(errno));
    probeWrite(fd, flag, path);
    return;
  }
  if (errno != ENOENT) refuse(flag, path, std::strerror(errno));
  const std::string dir = parentOf(path);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0)
    refuse(flag, path, "the directory " + dir + " does not exist (create it first)");
  if (!S_ISDIR(dir_st.st_mode)) refuse(flag, path, dir + " is not a directory");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return;  // made meanwhile by someone else: writing will tell
    refuse(flag, path, std::string("cannot be created: ") + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(path.c_str());
}

namespace {

// PATH made absolute, symlinks and ".", ".." resolved as far as it exists.
std::filesystem::path outputIdentityPath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) p = std::filesystem::absolute(path, ec).lexically_normal();
  return p;
}

bool outputSameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  if (a == b) return true;
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

bool outputUnder(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  const std::filesystem::path rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

}  // namespace

void checkDistinctOutputs(const std::vector<OutputName>& outputs) {
  std::vector<std::filesystem::path> resolved;
  for (const OutputName& o : outputs) resolved.push_back(outputIdentityPath(o.path));
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const OutputName &a = outputs[i], &b = outputs[j];
      if (a.path.empty() || b.path.empty()) continue;
      const std::string both = a.flag + " " + a.path + " and " + b.flag + " " + b.path;
      if (outputSameFile(resolved[i], resolved[j]))
        throw ConfigError(both + " name one file (" + resolved[i].string() +
                          "): one would replace the other; give each output its own file");
      const bool a_folder = !a.files_prefix.empty(), b_folder = !b.files_prefix.empty();
      if (a_folder == b_folder) continue;
      const OutputName& file = a_folder ? b : a;
      const OutputName& folder = a_folder ? a : b;
      const std::filesystem::path& rf = a_folder ? resolved[j] : resolved[i];
      const std::filesystem::path& rd = a_folder ? resolved[i] : resolved[j];
      if (outputUnder(rd, rf))
        throw ConfigError(both + ": the folder " + folder.path + " would be made inside the file " + file.path +
                          "; give the file another name");
      if (rf.parent_path() == rd && rf.filename().string().rfind(folder.files_prefix, 0) == 0)
        throw ConfigError(both + ": " + file.path + " is where " + folder.flag + " writes its files (" +
                          folder.files_prefix + "<rank>); give the file another name or folder");
    }
  }
}

}  // namespace shardscope

namespace shardscope {

// Named, not anonymous: OutputFile::Impl holds one (GCC warns when a unity batch includes this file).
namespace output_file_detail {

// A stream buffer over a file descriptor that keeps the first write error's
// errno (an ofstream only says "failed").
class FdBuf final : public std::streambuf {
 public:
  explicit FdBuf(int fd) : m_fd(fd), m_buf(1 << 16) { setp(m_buf.data(), m_buf.data() + m_buf.size()); }
  int error() const { return m_error; }
  bool drain() {
    const char* p = pbase();
    while (p < pptr() && m_error == 0) {
      const ssize_t n = ::write(m_fd, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) m_error = n < 0 ? errno : EIO;
      else p += n;
    }
    setp(m_buf.data(), m_buf.data() + m_buf.size());
    return m_error == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  int m_fd;
  std::vector<char> m_buf;
  int m_error = 0;
};

}  // namespace output_file_detail

using output_file_detail::FdBuf;

struct OutputFile::Impl {
  std::string path, temp;  // temp empty: written in place (a device, a FIFO)
  int fd = -1;
  std::unique_ptr<FdBuf> buf;
  std::unique_ptr<std::ostream> stream;
  bool committed = false;

  [[noreturn]] void fail(const std::string& what, int error) {
    throw RunError(path + ": " + what + ": " + std::strerror(error));
  }
};

OutputFile::OutputFile(const std::string& path) : m_impl(std::make_unique<Impl>()) {
  Impl& f = *m_impl;
  f.path = path;
  // A symlink's target is what gets replaced (the link stays a link).
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (char* target = ::realpath(path.c_str(), nullptr)) {
      f.path = target;
      std::free(target);
    }
  }
  struct stat st {};
  const bool exists = ::stat(f.path.c_str(), &st) == 0;
  const bool special = exists && !S_ISREG(st.st_mode);
  if (special && S_ISFIFO(st.st_mode)) {
    {
      std::lock_guard lock(g_outputFifoMutex);
      for (const std::string& name : {path, f.path}) {
        if (auto it = g_outputFifos.find(name); it != g_outputFifos.end()) {
          f.fd = it->second;
          g_outputFifos.erase(it);
          break;
        }
      }
    }
    if (f.fd < 0) f.fd = openOutputFifo(f.path);
    if (f.fd < 0) {
      if (errno == ENXIO) throw RunError(path + ": cannot write: " + kOutputFifoNoReader);
      f.fail("cannot open", errno);
    }
  } else if (special) {
    f.fd = ::open(f.path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
    if (f.fd < 0) f.fail("cannot open", errno);
  } else {
    // Beside the path: the rename stays in one filesystem.
    std::string temp = f.path + ".tmp-XXXXXX";
    f.fd = ::mkostemp(temp.data(), O_CLOEXEC);
    if (f.fd < 0) f.fail("cannot create a temporary file beside it", errno);
    f.temp = std::move(temp);
    // The old file's mode, else what a plain create gives (mkstemp makes 0600).
    ::fchmod(f.fd, exists ? (st.st_mode & 07777) : 0644);
  }
  f.buf = std::make_unique<FdBuf>(f.fd);
  f.stream = std::make_unique<std::ostream>(f.buf.get());
}

OutputFile::~OutputFile() {
  Impl& f = *m_impl;
  if (f.fd >= 0) ::close(f.fd);
  if (!f.committed && !f.temp.empty()) ::unlink(f.temp.c_str());
}

std::ostream& OutputFile::stream() { return *m_impl->stream; }

void OutputFile::commit() {
  Impl& f = *m_impl;
  f.stream->flush();
  if (!f.buf->drain()) f.fail("cannot write", f.buf->error());
  if (!*f.stream) f.fail("cannot write", EIO);
  // On disk before the rename: a crash leaves the old file or the whole new one.
  if (!f.temp.empty() && ::fsync(f.fd) != 0) f.fail("cannot write", errno);
  const int fd = std::exchange(f.fd, -1);
  if (::close(fd) != 0 && errno != EINTR) f.fail("cannot write", errno);
  if (!f.temp.empty() && std::rename(f.temp.c_str(), f.path.c_str()) != 0) f.fail("cannot rename the finished temporary file to it", errno);
  f.committed = true;
}

void writeOutputFile(const std::string& path, const std::function<void(std::ostream&)>& write) {
  OutputFile file(path);
  write(file.stream());
  file.commit();
}

}  // namespace shardscope
