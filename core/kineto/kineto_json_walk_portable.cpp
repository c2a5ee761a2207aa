// The trace walk for any CPU (simdjson's builtin kernel for the default flags).
#define KINETO_WALK_ENTRY readKinetoJsonPortable
#define KINETO_WALK_STREAM readKinetoJsonStreamPortable
#define KINETO_WALK_PARTS readKinetoJsonPartsPortable
#define KINETO_WALK_RELEASE releaseKinetoParserPortable
#include "kineto/kineto_json_walk.inc"
