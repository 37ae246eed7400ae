// The CI timing check's yardstick (bench/timing_check.cpp, and through bench/timing_baseline_lib.cpp
// the Python side of bench/timing_check.py): an exact counter (std::unordered_map increment) on the
// stream's keys folded to 4096 values, and the clock paths and yardstick are timed with.
//
// Why folded: over the stream's 10^5 keys the map is ~5 MB, so its speed is that of the shared L3
// and memory, and it moved with whatever else ran (other processes, and even which path ran just
// before it: up to 2x between runs) while the cache-resident paths it divides barely moved. At
// 4096 keys (~200 KB) it stays in the core's L2 like the paths' own state, and one untimed pass
// restores it after a path evicted it.
#pragma once

#include <cstdint>
#include <ctime>
#include <unordered_map>
#include <vector>

#include "bench_streams.hpp"

namespace dpsketch::bench {

struct ExactInt {
  std::unordered_map<std::uint64_t, std::uint64_t> m;
  std::uint64_t count = 0;
  void update(std::int64_t x) { ++m[static_cast<std::uint64_t>(x)]; ++count; }
  std::uint64_t n() const { return count; }
};

inline constexpr std::int64_t kYardstickKeys = 4096;

// The yardstick's items: each key folded into [0, kYardstickKeys) (Zipf keys: the heavy ones stay
// apart).
inline std::vector<std::int64_t> yardstick_items(const std::int64_t* ints, std::size_t n) {
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = ints[i] & (kYardstickKeys - 1);
  return out;
}

// Seconds by the check's clock. CPU time of the calling thread by default: on a shared machine the
// time a pass spends descheduled is the other processes' work, not this path's, and it is what made
// wall-clock ratios swing (a pass preempted for a time slice reads several times slower). Wall time
// on request, for a quiet machine.
inline double clock_seconds(bool cpu) {
  if (!cpu) return now_seconds();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Keeps the compiler from dropping the timed work.
inline volatile std::uint64_t g_sink;

// One pass of `s` over xs[begin, begin + count); seconds by the clock.
template <class S, class Xs>
double timed_pass(S& s, const Xs& xs, std::size_t begin, std::size_t count, bool cpu) {
  const double t0 = clock_seconds(cpu);
  for (std::size_t i = begin; i < begin + count; ++i) s.update(xs[i]);
  const double t1 = clock_seconds(cpu);
  g_sink = g_sink + s.n();
  return t1 - t0;
}

}  // namespace dpsketch::bench
