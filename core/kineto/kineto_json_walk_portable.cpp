// The trace walk for any CPU (simdjson's builtin kernel for the default flags).
#define KINETO_WALK_ENTRY readKinetoJsonPortable
#include "kineto/kineto_json_walk.inc"
