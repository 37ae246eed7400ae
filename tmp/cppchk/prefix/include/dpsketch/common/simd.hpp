// Runtime CPU dispatch for the optional AVX2 kernels. The default build targets baseline x86-64, so
// kernels are compiled with __attribute__((target("avx2"))) and run only when the CPU (and OS)
// report AVX2. Every kernel has a portable twin with bit-identical results; setting
// DPSKETCH_NO_SIMD=1 in the environment forces the portable paths at run time (the tests run
// both), and defining DPSKETCH_NO_DISPATCH compiles the AVX2 kernels out.
#pragma once

#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DPSKETCH_NO_DISPATCH)
#define DPSKETCH_X86_DISPATCH 1
#include <immintrin.h>
#endif

namespace dpsketch::simd {

inline bool detect_avx2() noexcept {
#ifdef DPSKETCH_X86_DISPATCH
  const char* off = std::getenv("DPSKETCH_NO_SIMD");
  if (off && *off && *off != '0') return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Decided once per process.
inline bool avx2() noexcept {
  static const bool on = detect_avx2();
  return on;
}

}  // namespace dpsketch::simd
