// What the two key -> slot tables (common/slot_table.hpp, common/compact_table.hpp) share: the
// answer of a lookup, and how many positions a table gets for its number of slots.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpsketch::detail {

// The slot of an absent key.
inline constexpr std::int32_t kNoSlot = -1;

// Where a key is (slot >= 0, at position pos) or would be inserted (slot == kNoSlot; pos is the
// free position its probe ended at).
struct SlotProbe {
  std::size_t pos;
  std::int32_t slot;
};

// The smallest power of two >= both `at_least` (a power of two) and spread * max_entries: a load
// of at most 1/spread.
inline std::size_t table_positions(std::uint32_t max_entries, std::size_t spread, std::size_t at_least) noexcept {
  std::size_t n = at_least;
  while (n < spread * static_cast<std::size_t>(max_entries)) n <<= 1;
  return n;
}

}  // namespace dpsketch::detail
