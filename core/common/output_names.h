// Outputs a command writes, compared so no two name one file: one would
// silently replace the other (--trace x.json --summary x.json).
#pragma once

#include <string>
#include <vector>

namespace shardscope {

// One output of a command, for checkDistinctOutputs. A folder output (its
// files named <files_prefix><n>) has files_prefix set.
struct OutputName {
  std::string flag;  // "--trace"
  std::string path;
  std::string files_prefix;  // folders only: the names written inside
};

// Throws ConfigError "--trace X and --summary X name one file ..." when two
// outputs would write one file: the same path after resolving symlinks, "."
// and "..", or one existing file under two names (the same inode: a hard
// link); or a file that is a folder output, holds one, or is one of the
// folder's file names. Empty paths are not outputs. (common/output_file.cpp)
void checkDistinctOutputs(const std::vector<OutputName>& outputs);

}  // namespace shardscope
