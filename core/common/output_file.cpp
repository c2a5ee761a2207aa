#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

void checkOutputFile(const std::string& flag, const std::string& path) {
  if (path.empty()) throw ConfigError(flag + " needs a file name, got ''");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) refuse(flag, path, "is a directory; give a file name (e.g. " + path + "/out.json)");
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return;  // a reader on the other end takes it
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

}  // namespace shardscope
