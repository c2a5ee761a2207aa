// The files a command writes. Checked before a run (a missing directory, a
// directory in the file's place, a read-only file or a device that refuses
// writes, /dev/full, is found in a millisecond instead of after the whole run;
// nothing is changed by the check), then written whole or not at all: into a
// temporary file beside the path, synced and renamed over it when complete, so
// a full disk, a file-size limit or a crash never leaves half a file under the
// final name. A device or a FIFO (no rename there) is written in place, every
// write and the close checked. A FIFO is opened without waiting: one that no
// process reads is an error (a blocking open would wait forever); the write
// end the check opened is kept until the output is written, so its reader
// does not see an early end. common/output_names.h: no two outputs name one file.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace shardscope {

// Throws ConfigError "<flag> PATH: <reason>" when PATH cannot be written.
void checkOutputFile(const std::string& flag, const std::string& path);

// One output being written. Throws RunError "PATH: cannot write: <errno
// text>" (ENOSPC, EFBIG under ulimit -f with SIGXFSZ ignored, EIO...). Not
// committed (an exception while writing): the temporary file is removed.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  void commit();  // flush, fsync, close, rename: the file is complete under its name

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// OutputFile(path), write(stream), commit().
void writeOutputFile(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace shardscope
