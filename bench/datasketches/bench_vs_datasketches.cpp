// Per-update cost of dpsketch's counter summaries (SpaceSaving, MisraGries) against Apache
// DataSketches' C++ frequent_items_sketch at the same a-priori error bound. Benchmark
// only: DataSketches is fetched outside the repository by fetch_datasketches.sh and compiled in by
// run.sh; nothing of it is vendored here. dpsketch is used through its public API only
// (`SpaceSaving<std::int64_t>(k)`, `.update(x)`, `.memory_bytes()`; same for MisraGries), plus the
// probe-only and eviction floors of bench/probe_floor.hpp (their own table, with ratios to them).
//
// Same error bound. Our guarantees (docs/algorithms.md §3, §2): SpaceSaving with k~ counters
// overestimates by at most c_min <= n/k~; Misra-Gries with k~ counters underestimates by at most
// n/(k~+1). DataSketches' frequent_items_sketch(lg_max_map_size) documents an a-priori error of
// epsilon * n with epsilon = 3.5 / 2^lg_max_map_size (get_apriori_error / get_epsilon, EPSILON_FACTOR
// 3.5 in frequent_items_sketch.hpp). It gets the smallest lg_max_map_size with
// 3.5 / 2^lg <= 1/(k~+1), i.e. a bound no looser than either of ours (for k~ a power of two this
// is 2^lg = 4 k~, epsilon = 0.875 / k~; the map then holds up to 0.75 * 2^lg = 3 k~ items).
//
// Streams: i.i.d. Zipf over 10^5 keys (bench/bench_streams.hpp zipf_ints, the same seeds as
// dpsketch_bench), skew 0 = uniform; int64 keys; generated before any timing.
//
// Timing: each structure is created once per (stream, k~), fed one untimed pass of the stream (so
// it is full and evicting / purging), then every round times `passes` further passes per
// contender: steady state, as in dpsketch_bench, whose structures persist across iterations. With
// --fresh, every timed pass instead feeds a structure constructed (untimed) just before it: the fill,
// the first evictions / purges and DataSketches' map growth are in the time. CPU
// time of this thread (CLOCK_THREAD_CPUTIME_ID) per update. Within a round all contenders run one
// after another, the order rotated by one each round; reported are medians over rounds of ns/update
// and medians of the same-round ratios DataSketches / dpsketch.
//
// Usage: bench_vs_datasketches [--rounds R] [--n-log2 L] [--passes P] [--k 256,1024,4096]
//                              [--streams 1.1,0.8,uniform] [--no-floor] [--ds-lg-offset D] [--fresh]
//   defaults: R = 11, L = 20 (n = 2^20), P = max(1, 2^22 / n) passes per timing, D = 0.
//   --ds-lg-offset D gives DataSketches lg_max_map_size = (same-bound value) + D: a sensitivity
//   check only; with D < 0 its bound is looser than ours (D = -1: 1.75 n/k~), no longer the same.
#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_streams.hpp"
#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "frequent_items_sketch.hpp"
#include "probe_floor.hpp"

#ifndef DATASKETCHES_VERSION_STRING
#define DATASKETCHES_VERSION_STRING "unknown"
#endif

namespace {

constexpr std::size_t kUniverse = 100000;
constexpr double kDataSketchesEpsilonFactor = 3.5;  // frequent_items_sketch: epsilon = 3.5 / 2^lg_max_map_size

using DsSketch = datasketches::frequent_items_sketch<std::int64_t>;

// Allocator that counts the bytes live through it; only the memory twin of the DataSketches sketch
// uses it (the timed sketch keeps the default std::allocator).
std::size_t g_counted_bytes = 0;
template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U>&) {}
  T* allocate(std::size_t n) {
    g_counted_bytes += n * sizeof(T);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) {
    g_counted_bytes -= n * sizeof(T);
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const CountingAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const CountingAllocator<U>&) const { return false; }
};
using DsCountedSketch = datasketches::frequent_items_sketch<std::int64_t, std::uint64_t, std::hash<std::int64_t>,
                                                            std::equal_to<std::int64_t>, CountingAllocator<std::int64_t>>;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Keeps the compiler from treating the structure's state as dead after a pass.
template <class T>
void escape(T* p) {
  asm volatile("" : : "g"(p) : "memory");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Smallest lg_max_map_size whose a-priori epsilon 3.5 / 2^lg is <= 1 / (k + 1) (<= 1/k too).
int datasketches_lg_for(std::uint64_t k) {
  int lg = datasketches::frequent_items_sketch<std::int64_t>::LG_MIN_MAP_SIZE;
  while (kDataSketchesEpsilonFactor / std::ldexp(1.0, lg) > 1.0 / double(k + 1)) ++lg;
  return lg;
}

std::string stream_name(double skew) {
  if (skew == 0.0) return "uniform";
  char b[32];
  std::snprintf(b, sizeof b, "Zipf %.1f", skew);
  return b;
}

struct Contender {
  std::string name;
  std::function<void()> pass;   // one untimed-or-timed pass over the stream
  std::function<void()> renew;  // --fresh: a new structure in place of the old one (untimed)
  std::vector<double> ns;       // per round, ns/update
};

struct Row {
  std::uint64_t k;
  std::string stream;
  int lg;
  std::array<double, 5> floor_ratios;  // SS / floor, MG / floor, eviction floor / floor, SS / eviction floor, MG / eviction floor
  double ss, mg, ds, floor, evict, ds_over_ss, ds_over_mg, ds_over_ss_lo, ds_over_ss_hi, ds_over_mg_lo, ds_over_mg_hi;
  std::size_t ss_bytes, mg_bytes, ds_bytes, floor_bytes;
  double ds_max_error_over_n;
  std::uint32_t ds_active;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "bench_vs_datasketches: %s\nusage: bench_vs_datasketches [--rounds R] [--n-log2 L] [--passes P] "
               "[--k 256,1024,4096] [--streams 1.1,0.8,uniform] [--no-floor] [--ds-lg-offset D] [--fresh]\n", what.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 11, n_log2 = 20, passes = 0, ds_lg_offset = 0;
  bool with_floor = true, fresh = false;
  std::vector<std::uint64_t> ks = {256, 1024, 4096};
  std::vector<double> skews = {1.1, 0.8, 0.0};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rounds") rounds = std::atoi(value().c_str());
    else if (a == "--n-log2") n_log2 = std::atoi(value().c_str());
    else if (a == "--passes") passes = std::atoi(value().c_str());
    else if (a == "--no-floor") with_floor = false;
    else if (a == "--fresh") fresh = true;
    else if (a == "--ds-lg-offset") ds_lg_offset = std::atoi(value().c_str());
    else if (a == "--k") {
      ks.clear();
      for (const auto& s : split(value())) ks.push_back(std::strtoull(s.c_str(), nullptr, 10));
    } else if (a == "--streams") {
      skews.clear();
      for (const auto& s : split(value())) skews.push_back(s == "uniform" ? 0.0 : std::atof(s.c_str()));
    } else usage_error("unknown argument " + a);
  }
  if (rounds < 1 || n_log2 < 10 || n_log2 > 26 || passes < 0 || ks.empty() || skews.empty()) usage_error("bad parameter value");
  for (std::uint64_t k : ks) {
    if (k < 1 || k > (std::uint64_t{1} << 24)) usage_error("k~ must be in [1, 2^24]");
    const int lg = datasketches_lg_for(k) + ds_lg_offset;
    if (lg < DsSketch::LG_MIN_MAP_SIZE || lg > 28) usage_error("--ds-lg-offset puts lg_max_map_size outside [3, 28]");
  }
  const std::size_t n = std::size_t{1} << n_log2;
  if (passes == 0) passes = std::max(1, 1 << std::max(0, 22 - n_log2));
  const double updates_per_timing = double(n) * passes;

  std::printf("# dpsketch counters vs DataSketches frequent_items_sketch<int64_t> (DataSketches %s)\n", DATASKETCHES_VERSION_STRING);
  std::printf("# n = 2^%d items per stream, universe 10^5 keys, %d rounds, %d pass(es) of the stream per timing; "
              "CPU time per update, %s\n", n_log2, rounds, passes,
              fresh ? "fresh structures (each timed pass feeds a new one)" : "steady state (one untimed pass first)");
  if (ds_lg_offset != 0)
    std::printf("# --ds-lg-offset %d: DataSketches lg_max_map_size = same-bound value %+d; NOT the same error bound\n", ds_lg_offset,
                ds_lg_offset);
  std::fflush(stdout);

  std::vector<Row> rows;
  for (double skew : skews) {
    const std::vector<std::int64_t> xs =
        dpsketch::bench::zipf_ints(n, skew, kUniverse, 0x5eed0000 + std::uint64_t(skew * 10));  // dpsketch_bench's seeds
    for (std::uint64_t k : ks) {
      const int lg = datasketches_lg_for(k) + ds_lg_offset;
      auto ss = std::make_unique<dpsketch::SpaceSaving<std::int64_t>>(k);
      auto mg = std::make_unique<dpsketch::MisraGries<std::int64_t>>(k);
      auto ds = std::make_unique<DsSketch>(static_cast<std::uint8_t>(lg));
      std::unique_ptr<dpsketch::bench::ProbeFloor<std::int64_t>> floor;
      std::unique_ptr<dpsketch::bench::EvictionFloor<std::int64_t>> evict;
      if (with_floor) {
        floor = std::make_unique<dpsketch::bench::ProbeFloor<std::int64_t>>(k, xs);
        evict = std::make_unique<dpsketch::bench::EvictionFloor<std::int64_t>>(k);
      }

      std::vector<Contender> cs;
      cs.push_back({"SpaceSaving", [&] { for (const std::int64_t& x : xs) ss->update(x); escape(ss.get()); },
                    [&] { ss.reset(); ss = std::make_unique<dpsketch::SpaceSaving<std::int64_t>>(k); }, {}});
      cs.push_back({"MisraGries", [&] { for (const std::int64_t& x : xs) mg->update(x); escape(mg.get()); },
                    [&] { mg.reset(); mg = std::make_unique<dpsketch::MisraGries<std::int64_t>>(k); }, {}});
      cs.push_back({"DataSketches", [&] { for (const std::int64_t& x : xs) ds->update(x); escape(ds.get()); },
                    [&] { ds.reset(); ds = std::make_unique<DsSketch>(static_cast<std::uint8_t>(lg)); }, {}});
      if (floor)
        cs.push_back({"floor", [&] { for (const std::int64_t& x : xs) floor->update(x); escape(floor.get()); },
                      [&] { floor.reset(); floor = std::make_unique<dpsketch::bench::ProbeFloor<std::int64_t>>(k, xs); }, {}});
      if (evict)
        cs.push_back({"evict", [&] { for (const std::int64_t& x : xs) evict->update(x); escape(evict.get()); },
                      [&] { evict.reset(); evict = std::make_unique<dpsketch::bench::EvictionFloor<std::int64_t>>(k); }, {}});

      if (!fresh)
        for (auto& c : cs) c.pass();  // warm-up: full, evicting / purging from here on
      for (int r = 0; r < rounds; ++r)
        for (std::size_t j = 0; j < cs.size(); ++j) {
          Contender& c = cs[(j + std::size_t(r)) % cs.size()];
          double t = 0;
          for (int p = 0; p < passes; ++p) {
            if (fresh) c.renew();
            const double t0 = thread_cpu_seconds();
            c.pass();
            t += thread_cpu_seconds() - t0;
          }
          c.ns.push_back(t * 1e9 / updates_per_timing);
        }

      std::array<double, 5> row_floor_ratios{};
      auto ratios = [&](std::size_t num, std::size_t den) {
        std::vector<double> v(static_cast<std::size_t>(rounds));
        for (int r = 0; r < rounds; ++r) v[std::size_t(r)] = cs[num].ns[std::size_t(r)] / cs[den].ns[std::size_t(r)];
        return v;
      };
      const auto r_ss = ratios(2, 0), r_mg = ratios(2, 1);
      if (floor) {  // same-round ratios to the floors (medians)
        row_floor_ratios = {median(ratios(0, 3)), median(ratios(1, 3)), median(ratios(4, 3)), median(ratios(0, 4)),
                            median(ratios(1, 4))};
      }

      // Memory of the DataSketches sketch: a twin with a counting allocator, fed the same passes.
      g_counted_bytes = 0;
      std::size_t ds_bytes = 0;
      {
        DsCountedSketch twin(static_cast<std::uint8_t>(lg), DsCountedSketch::LG_MIN_MAP_SIZE, std::equal_to<std::int64_t>(),
                             CountingAllocator<std::int64_t>());
        for (int p = 0; p < 2; ++p)
          for (const std::int64_t& x : xs) twin.update(x);
        ds_bytes = sizeof(twin) + g_counted_bytes;
      }

      Row row{};
      row.floor_ratios = row_floor_ratios;
      row.k = k;
      row.stream = stream_name(skew);
      row.lg = lg;
      row.ss = median(cs[0].ns);
      row.mg = median(cs[1].ns);
      row.ds = median(cs[2].ns);
      row.floor = floor ? median(cs[3].ns) : 0.0;
      row.evict = evict ? median(cs[4].ns) : 0.0;
      row.ds_over_ss = median(r_ss);
      row.ds_over_mg = median(r_mg);
      row.ds_over_ss_lo = *std::min_element(r_ss.begin(), r_ss.end());
      row.ds_over_ss_hi = *std::max_element(r_ss.begin(), r_ss.end());
      row.ds_over_mg_lo = *std::min_element(r_mg.begin(), r_mg.end());
      row.ds_over_mg_hi = *std::max_element(r_mg.begin(), r_mg.end());
      row.ss_bytes = ss->memory_bytes();
      row.mg_bytes = mg->memory_bytes();
      row.ds_bytes = ds_bytes;
      row.floor_bytes = floor ? floor->memory_bytes() : 0;
      row.ds_max_error_over_n = double(ds->get_maximum_error()) / double(ds->get_total_weight());
      row.ds_active = ds->get_num_active_items();
      rows.push_back(row);
      std::fprintf(stderr, "done: %s k~=%llu\n", row.stream.c_str(), static_cast<unsigned long long>(k));
    }
  }

  std::printf("\n| k~ | stream | SpaceSaving ns | MisraGries ns | DataSketches ns | floor ns | DS / SS | DS / MG | DS / SS range | DS / MG range |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    char fl[32] = "-";
    if (r.floor > 0) std::snprintf(fl, sizeof fl, "%.2f", r.floor);
    std::printf("| %llu | %s | %.2f | %.2f | %.2f | %s | %.2f | %.2f | %.2f-%.2f | %.2f-%.2f |\n", static_cast<unsigned long long>(r.k),
                r.stream.c_str(), r.ss, r.mg, r.ds, fl, r.ds_over_ss, r.ds_over_mg, r.ds_over_ss_lo, r.ds_over_ss_hi,
                r.ds_over_mg_lo, r.ds_over_mg_hi);
  }

  if (with_floor) {
    std::printf("\n| k~ | stream | floor ns | eviction floor ns | SS / floor | MG / floor | eviction floor / floor | "
                "SS / eviction floor | MG / eviction floor |\n");
    std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Row& r : rows)
      std::printf("| %llu | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", static_cast<unsigned long long>(r.k),
                  r.stream.c_str(), r.floor, r.evict, r.floor_ratios[0], r.floor_ratios[1], r.floor_ratios[2],
                  r.floor_ratios[3], r.floor_ratios[4]);
    std::printf("\nfloor: bench/probe_floor.hpp ProbeFloor (hash + probe, ++count on a hit, nothing on a miss); eviction "
                "floor: EvictionFloor (the same storage, a miss evicts round-robin: the least any evicting summary does). "
                "Ratios: medians of same-round ratios.\n");
  }

  std::printf("\n%s: DataSketches lg_max_map_size = smallest lg with 3.5 / 2^lg <= 1/(k~+1)%s "
              "(SpaceSaving n/k~, MisraGries n/(k~+1); docs/algorithms.md §3, §2).\n",
              ds_lg_offset == 0 ? "Same error bound" : "NOT the same error bound", ds_lg_offset == 0 ? "" : ", plus --ds-lg-offset");
  std::printf("\n| k~ | stream | DS lg_max_map_size | DS epsilon | 1/k~ | DS max error / n at the end | DS items held | "
              "SS B/counter | MG B/counter | DS bytes | DS B per k~ | floor B/counter |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double k = double(r.k);
    char fl[32] = "-";
    if (r.floor_bytes) std::snprintf(fl, sizeof fl, "%.1f", double(r.floor_bytes) / k);
    std::printf("| %llu | %s | %d | %.3g | %.3g | %.3g | %u | %.1f | %.1f | %zu | %.1f | %s |\n", static_cast<unsigned long long>(r.k),
                r.stream.c_str(), r.lg, kDataSketchesEpsilonFactor / std::ldexp(1.0, r.lg), 1.0 / k, r.ds_max_error_over_n,
                r.ds_active, double(r.ss_bytes) / k, double(r.mg_bytes) / k, r.ds_bytes, double(r.ds_bytes) / k,
                fl);
  }
  return 0;
}
