// The CI timing check's yardstick as a shared library, for the Python side of
// bench/timing_check.py (loaded with ctypes): the Python paths are timed in rounds next to the same
// exact counter as the C++ paths (bench/timing_exact.hpp), in the same process, so that both
// passes of a round see the same state of the machine.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "timing_exact.hpp"

namespace {

struct Yardstick {
  std::vector<std::int64_t> items;
  dpsketch::bench::ExactInt exact;
  bool cpu;
};

}  // namespace

extern "C" {

// The yardstick over the stream ints[0, n) (folded, bench/timing_exact.hpp), filled by one pass.
void* dpsketch_timing_new(const std::int64_t* ints, std::size_t n, int cpu_clock) {
  auto* y = new Yardstick{dpsketch::bench::yardstick_items(ints, n), {}, cpu_clock != 0};
  dpsketch::bench::timed_pass(y->exact, y->items, 0, n, y->cpu);
  return y;
}

// Seconds (by the clock chosen at creation) of one yardstick pass over items [begin, begin + count).
double dpsketch_timing_pass(void* h, std::size_t begin, std::size_t count) {
  auto* y = static_cast<Yardstick*>(h);
  return dpsketch::bench::timed_pass(y->exact, y->items, begin, count, y->cpu);
}

void dpsketch_timing_free(void* h) { delete static_cast<Yardstick*>(h); }

}  // extern "C"
