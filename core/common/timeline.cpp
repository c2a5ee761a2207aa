#include "common/timeline.h"

namespace shardscope {

namespace {
thread_local TimelineCursor* t_cursor = nullptr;
}

TimelineCursor* currentCursor() { return t_cursor; }
void setCurrentCursor(TimelineCursor* cursor) { t_cursor = cursor; }

}  // namespace shardscope
