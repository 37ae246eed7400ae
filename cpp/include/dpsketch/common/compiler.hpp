// Inlining control for hot paths: an update's common case inlined into the caller's loop, its
// rare cases (evictions, stage rebuilds) out of line so they do not cost the common case registers
// and spills (docs/benchmarks.md §Counters). DPSKETCH_ASSUME(c) tells the optimizer c
// holds (it must: a false assumption is undefined behaviour), so it can drop a re-test of c.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define DPSKETCH_ALWAYS_INLINE inline __attribute__((always_inline))
#define DPSKETCH_NOINLINE __attribute__((noinline))
#define DPSKETCH_ASSUME(cond) ((cond) ? static_cast<void>(0) : __builtin_unreachable())
#elif defined(_MSC_VER)
#define DPSKETCH_ALWAYS_INLINE __forceinline
#define DPSKETCH_NOINLINE __declspec(noinline)
#define DPSKETCH_ASSUME(cond) __assume(cond)
#else
#define DPSKETCH_ALWAYS_INLINE inline
#define DPSKETCH_NOINLINE
#define DPSKETCH_ASSUME(cond) static_cast<void>(0)
#endif
