# One INTERFACE target carries the project's warning and sanitizer flags, so
# every project target gets the same ones and third-party headers stay quiet.
add_library(shardscope_flags INTERFACE)
target_compile_options(shardscope_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)

# Sanitizer reports need file:line in their stacks, not variables: line tables
# only (clang's -gline-tables-only, gcc's -g1) compile and link faster than -g.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(_sanitizer_debug -gline-tables-only)
else()
  set(_sanitizer_debug -g1)
endif()

if(SHARDSCOPE_SANITIZER STREQUAL "thread")
  target_compile_options(shardscope_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread ${_sanitizer_debug} -O1>)
  target_link_options(shardscope_flags INTERFACE -fsanitize=thread)
elseif(SHARDSCOPE_SANITIZER STREQUAL "address")
  target_compile_options(shardscope_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer ${_sanitizer_debug} -O1>)
  target_link_options(shardscope_flags INTERFACE -fsanitize=address,undefined)
elseif(NOT SHARDSCOPE_SANITIZER STREQUAL "")
  message(FATAL_ERROR "SHARDSCOPE_SANITIZER must be '', thread or address, not '${SHARDSCOPE_SANITIZER}'")
endif()

# libFuzzer comes with clang: core is built with its coverage hooks
# (fuzzer-no-link, see the top CMakeLists.txt) and tests/fuzz links it.
if(SHARDSCOPE_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "SHARDSCOPE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                      "configure with -DCMAKE_CXX_COMPILER=clang++ or SHARDSCOPE_FUZZ=OFF")
endif()

# The linker, as -fuse-ld=NAME for C++ links (lld links the many test
# executables several times faster than ld.bfd); empty: the compiler's default.
set(SHARDSCOPE_LINKER "" CACHE STRING "Linker for C++ executables and libraries (-fuse-ld=): lld, gold, or empty")
if(SHARDSCOPE_LINKER)
  add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=${SHARDSCOPE_LINKER}>)
endif()
