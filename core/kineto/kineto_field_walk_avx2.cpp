// The field walk built for AVX2 (CMake compiles this file with -mavx2 -mbmi
// -mbmi2 -mlzcnt -mpclmul, so simdjson's builtin kernel is "haswell").
#define KINETO_FIELD_WALK_KERNEL kFieldWalkAvx2
#include "kineto/kineto_field_walk.inc"
