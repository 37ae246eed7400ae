// Differentially private heavy hitters of the lines on stdin, from C++ with the header-only core:
// SpaceSaving with the exact recency tie rule, released by DPSS with a private stream length
// (docs/algorithms.md §0, §3; docs/privacy.md §Stream length).
//
//   cmake -S . -B build && cmake --install build --prefix /tmp/dps    # the C++ package
//   cmake -S examples/cpp -B build-ex -DCMAKE_PREFIX_PATH=/tmp/dps && cmake --build build-ex
//   seq 1 100000 | awk '{print $1 % 7 ? $1 : "hot"}' | build-ex/top_items 20 1.0 1e-6
#include <cstdlib>
#include <iostream>
#include <string>

#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/release/calibration.hpp"
#include "dpsketch/release/counter_release.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: top_items K EPSILON DELTA < lines\n";
    return 2;
  }
  using namespace dpsketch;
  try {
    const std::uint64_t k = std::stoull(argv[1]);
    const double epsilon = std::stod(argv[2]), delta = std::stod(argv[3]);
    // Every parameter is checked before any input is read.
    const release::Calibration cal = release::calibrate(epsilon, delta, release::LengthNeed::bounds, false);
    SpaceSaving<std::string> summary(2 * k);  // k̃ = 2k: Holland's recall guarantee
    for (std::string line; std::getline(std::cin, line);)
      if (!line.empty()) summary.update(line);
    release::SecureRng rng;  // keyed from getrandom(2)
    const release::Length length = release::make_length(cal, summary.n(), rng);
    const auto rel = release::dpss(summary, cal.eps_core, cal.delta_core, k, length, rng);
    std::cout << "# DPSS epsilon=" << cal.epsilon_total() << " delta=" << cal.delta_total()
              << " neighbours=" << cal.neighbours() << " threshold=" << rel.threshold << "\n";
    for (const auto& [item, noisy] : rel.items) std::cout << item << '\t' << noisy << '\n';
  } catch (const std::exception& e) {
    std::cerr << "top_items: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
