// Size limits shared by the counter summaries and the candidate set of the envelope wrapper.
#pragma once

#include <cstdint>
#include <string>

#include "dpsketch/common/errors.hpp"

namespace dpsketch {

// Upper limit on counters for the counter summaries: keeps int32 slot links and bounded memory.
inline constexpr std::uint32_t kMaxCapacity = 1u << 24;  // ~2 GB of state: larger is a mistake, or corrupt bytes

inline void check_capacity(std::uint64_t capacity) {
  if (capacity < 1 || capacity > kMaxCapacity)
    throw ParameterError("capacity must be between 1 and " + std::to_string(kMaxCapacity) + ", got " +
                         std::to_string(capacity));
}

}  // namespace dpsketch
