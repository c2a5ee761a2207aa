// The trace walk built for AVX2 (CMake compiles this file with -mavx2 -mbmi
// -mbmi2 -mlzcnt -mpclmul, so simdjson's builtin kernel is "haswell").
#define KINETO_WALK_ENTRY readKinetoJsonAvx2
#define KINETO_WALK_STREAM readKinetoJsonStreamAvx2
#define KINETO_WALK_PARTS readKinetoJsonPartsAvx2
#define KINETO_WALK_RELEASE releaseKinetoParserAvx2
#include "kineto/kineto_json_walk.inc"
