// The shared step of the mergeable-summaries merge (Agarwal et al. 2012; docs/algorithms.md §8),
// used by MisraGries::merge and by SpaceSaving::merge (which merges through the MG isomorphism).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace dpsketch::detail {

// Adds up the counts of equal keys in `all` (in place; the result is sorted by key) and returns
// the (capacity+1)-th largest combined count, or 0 when at most `capacity` keys remain. Subtracting
// it from every count and keeping the positive ones is the merge.
template <class Key>
std::uint64_t combine_and_cut(std::vector<std::pair<Key, std::uint64_t>>& all, std::uint32_t capacity) {
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::size_t w = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (w > 0 && all[w - 1].first == all[i].first) all[w - 1].second += all[i].second;
    else if (w != i) all[w++] = std::move(all[i]);
    else ++w;
  }
  all.resize(w);
  if (all.size() <= capacity) return 0;
  std::vector<std::uint64_t> v(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) v[i] = all[i].second;
  std::nth_element(v.begin(), v.begin() + capacity, v.end(), std::greater<>());
  return v[capacity];
}

}  // namespace dpsketch::detail
