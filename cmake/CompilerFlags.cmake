# One INTERFACE target carries the project's warning and sanitizer flags, so
# every project target gets the same ones and third-party headers stay quiet.
add_library(shardscope_flags INTERFACE)
target_compile_options(shardscope_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)

if(SHARDSCOPE_SANITIZER STREQUAL "thread")
  target_compile_options(shardscope_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -g -O1>)
  target_link_options(shardscope_flags INTERFACE -fsanitize=thread)
elseif(SHARDSCOPE_SANITIZER STREQUAL "address")
  target_compile_options(shardscope_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1>)
  target_link_options(shardscope_flags INTERFACE -fsanitize=address,undefined)
elseif(NOT SHARDSCOPE_SANITIZER STREQUAL "")
  message(FATAL_ERROR "SHARDSCOPE_SANITIZER must be '', thread or address, not '${SHARDSCOPE_SANITIZER}'")
endif()
