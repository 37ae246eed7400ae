// Benchmark streams, generated once outside any timed region: i.i.d. Zipf draws over a finite
// universe (item i, 0-based, with probability proportional to 1/(i+1)^skew -- the same law as
// dpsketch.datasets.zipf), as int64 keys or as short strings. Shared by the google-benchmark binary
// and the dependency-free CI timing check.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace dpsketch::bench {

inline std::vector<std::int64_t> zipf_ints(std::size_t n, double skew, std::size_t universe, std::uint64_t seed) {
  std::vector<double> cdf(universe);
  double acc = 0;
  for (std::size_t i = 0; i < universe; ++i) cdf[i] = acc += std::pow(double(i + 1), -skew);
  for (double& c : cdf) c /= acc;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  std::vector<std::int64_t> out(n);
  for (auto& x : out) {
    const auto it = std::upper_bound(cdf.begin(), cdf.end(), unif(rng));
    x = std::min<std::int64_t>(it - cdf.begin(), std::int64_t(universe) - 1);
  }
  return out;
}

// String keys "user:<id>" (7 to 10 bytes for ids below 10^5; short-string optimised in libstdc++).
// Views point into one contiguous buffer owned by the stream.
struct StringStream {
  std::string buffer;
  std::vector<std::string_view> keys;
};

inline StringStream to_strings(const std::vector<std::int64_t>& ids) {
  StringStream s;
  std::vector<std::size_t> ends;
  ends.reserve(ids.size());
  for (std::int64_t id : ids) {
    s.buffer += "user:";
    s.buffer += std::to_string(id);
    ends.push_back(s.buffer.size());
  }
  s.keys.reserve(ids.size());
  std::size_t start = 0;
  for (std::size_t e : ends) {
    s.keys.emplace_back(s.buffer.data() + start, e - start);
    start = e;
  }
  return s;
}

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace dpsketch::bench
