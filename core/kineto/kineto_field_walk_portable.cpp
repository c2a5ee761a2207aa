// The field walk for any CPU (simdjson's builtin kernel for the default flags).
#define KINETO_FIELD_WALK_KERNEL kFieldWalkPortable
#include "kineto/kineto_field_walk.inc"
