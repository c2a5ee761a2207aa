// Writes the plain data of a ValueTree as a pickle that Python's pickle.load
// (and readPickle) reads back: protocol 2 as PyTorch's own dumps are, or 3 when
// the tree holds bytes. Nothing but data opcodes, no memo; a container nested
// in itself (possible in a tree the reader built from a memo) is refused.
#pragma once

#include <string>

#include "postmortem/value_tree.h"

namespace shardscope::postmortem {

// The pickle of tree.root. Throws PostmortemFormatError for a tree nested
// deeper than max_depth (a container inside itself).
std::string writePickle(const ValueTree& tree, int max_depth = 256);

}  // namespace shardscope::postmortem
