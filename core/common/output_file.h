// Checking, before a run, that the files it will write can be written: a
// missing directory, a directory in the file's place, a read-only file or a
// device that refuses writes (/dev/full) is found in a millisecond instead of
// after the whole run. Nothing is changed: an existing file is opened without
// truncating it, a new one is created and removed again.
#pragma once

#include <string>

namespace shardscope {

// Throws ConfigError "<flag> PATH: <reason>" when PATH cannot be written.
void checkOutputFile(const std::string& flag, const std::string& path);

}  // namespace shardscope
