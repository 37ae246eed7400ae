// Size and magnitude limits shared by every summary and sketch, and the checks that enforce them.
//
// Why these limits: counts, stream lengths and cells are 64-bit. Without a bound, crafted bytes
// (or an absurdly long stream) could carry a count whose next increment wraps, hits a sentinel
// value or overflows int64 in a release. With the bounds below every quantity keeps headroom:
//   * counter summaries: n <= kMaxStreamLength = 2^62 (n = number of updates absorbed), so every
//     count (<= n), Misra-Gries value (count + base <= 2n <= 2^63) and noisy release value
//     (count + noise) stays far from 2^64 - 1 and from INT64_MAX.
//   * linear sketches (sketches/linear_sketch.hpp, kMaxCellMass = 2^62): the mass -- total |count|
//     absorbed plus the starting max |cell| (noise, restored cells) -- bounds every |cell| and |n|
//     (the private sketches' F2 row included), and never passes 2^62; so sums of two cells,
//     medians and release arithmetic never overflow. Unit, counted (turnstile) and batch updates
//     and merges check the mass first.
// Deserialization checks both bounds (a blob breaking them is corrupt: no real stream of 2^62
// items exists), and updates at the limit throw StreamLimitError / std::overflow_error
// (OverflowError in Python) before changing anything. 2^62 updates at one per nanosecond take
// 146 years.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "dpsketch/common/errors.hpp"

namespace dpsketch {

// Upper limit on counters for the counter summaries: keeps int32 slot links and bounded memory.
inline constexpr std::uint32_t kMaxCapacity = 1u << 24;  // ~2 GB of state: larger is a mistake, or corrupt bytes

// Largest stream length n (updates absorbed) of any summary or sketch; see above.
inline constexpr std::uint64_t kMaxStreamLength = std::uint64_t{1} << 62;
// SpaceSaving slots not backed by bytes of a serialized blob that a reader will still allocate
// (~7 MB of state); beyond that the writer pads one byte per free slot (docs/format.md), so the
// memory from_bytes allocates is always proportional to the length of its input.
inline constexpr std::uint32_t kUnbackedFreeSlots = 1u << 16;

inline void check_capacity(std::uint64_t capacity) {
  if (capacity < 1 || capacity > kMaxCapacity)
    throw ParameterError("capacity must be between 1 and " + std::to_string(kMaxCapacity) + ", got " +
                         std::to_string(capacity));
}

// Throws StreamLimitError unless `more` updates fit after `n` (n <= kMaxStreamLength holds).
inline void check_stream_room(std::uint64_t n, std::uint64_t more) {
  if (more > kMaxStreamLength - n) throw StreamLimitError(n, more);
}

}  // namespace dpsketch
