// Whether this test binary is built with a sanitizer (the tsan and asan
// presets): a few tests then skip what measures the product's resources, or
// repeats at scale code the other tests already run under the sanitizer.
#pragma once

// gcc says __SANITIZE_*__, clang (the asan preset) says __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHARDSCOPE_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SHARDSCOPE_UNDER_SANITIZER 1
#endif
#endif
