// Dependency-free timing program for the CI regression check (driven by bench/timing_check.py).
//
// Times a few key update paths on a Zipf(1.1) stream over 10^5 keys (and the counters also on a
// uniform one, their miss-heavy regime) and expresses each as a ratio to the yardstick of
// bench/timing_exact.hpp (an exact std::unordered_map counter, cache-resident). Path by path, each
// round times one yardstick pass next to one pass of the path over a chunk of its stream (~0.3-2
// ms each; which goes first alternates), so both see the same state of a shared machine; each timed
// pass follows an untimed one of the same structure over the previous chunk, so it starts from its
// own cache footprint, not from the other's. By default the clock is the thread's CPU time
// (bench::clock_seconds). Prints, per path, the per-round ns per item of both as one JSON object;
// bench/timing_check.py takes the median of the per-round ratios.
//
// Usage: dpsketch_timing [--rounds R] [--items N] [--dump FILE] [--paths a,b,...] [--slow PATH=K]...
//                        [--clock cpu|wall] [--list]
//   --dump FILE   also write the int stream there (raw little-endian int64), so the Python side of
//                 the check can time the bindings on the very same stream (--rounds 0: only that)
//   --paths       time only these paths (the check re-measures the ones that failed)
//   --slow PATH=K the timed pass of PATH runs K times over its chunk: K times the per-item work. Only
//                 for showing that the check catches a slower path (bench/timing_check.py passes it
//                 from DPSKETCH_TIMING_SLOWDOWN); the library is untouched.
//   --list        print the path names, one a line, and exit
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench_streams.hpp"
#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"
#include "timing_exact.hpp"

namespace {

using namespace dpsketch;
using bench::timed_pass;

// Items per yardstick pass: ~0.1-0.3 ms, every one of its keys many times.
constexpr std::size_t kBaseChunk = std::size_t{1} << 15;

struct Path {
  std::string name;
  std::size_t chunk;  // items per timed pass
  std::function<double(std::size_t begin, std::size_t count)> run;  // one timed pass, seconds
  int repeat = 1;  // --slow
  std::vector<double> base_ns{}, ns{};  // per round: ns per item of the yardstick pass and of the path pass
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "dpsketch_timing: %s\n", msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 41;
  std::size_t items = std::size_t{1} << 19;
  const char* dump = nullptr;
  bool cpu = true, list = false;
  std::vector<std::string> only;
  std::map<std::string, int> slow;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--rounds") rounds = std::atoi(value().c_str());
    else if (a == "--items") items = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--dump") dump = argv[i + 1 < argc ? ++i : i];
    else if (a == "--clock") {
      const std::string c = value();
      if (c != "cpu" && c != "wall") usage("--clock is cpu or wall");
      cpu = c == "cpu";
    } else if (a == "--paths") {
      const std::string s = value();
      for (std::size_t p = 0; p <= s.size();) {
        const std::size_t e = std::min(s.find(',', p), s.size());
        if (e > p) only.push_back(s.substr(p, e - p));
        p = e + 1;
      }
    } else if (a == "--slow") {
      const std::string s = value();
      const std::size_t eq = s.find('=');
      const int k = eq == std::string::npos ? 0 : std::atoi(s.c_str() + eq + 1);
      if (k < 1) usage("--slow takes PATH=K with an integer K >= 1");
      slow[s.substr(0, eq)] = k;
    } else if (a == "--list") list = true;
    else usage(("unknown argument " + a).c_str());
  }
  if (rounds < 0 || items < kBaseChunk) usage("need --rounds >= 0 and --items >= 32768");

  const auto ints = bench::zipf_ints(items, 1.1, 100000, 0x5eed000b);
  const auto strs = bench::to_strings(ints);
  const auto uniform = bench::zipf_ints(items, 0.0, 100000, 0x5eed0000);
  if (dump) {
    std::FILE* f = std::fopen(dump, "wb");
    if (!f || std::fwrite(ints.data(), sizeof(std::int64_t), ints.size(), f) != ints.size()) {
      std::fprintf(stderr, "cannot write %s\n", dump);
      return 2;
    }
    std::fclose(f);
  }

  if (rounds == 0) return 0;

  bench::ExactInt yardstick;
  const auto yard_items = bench::yardstick_items(ints.data(), ints.size());
  SpaceSaving<std::int64_t> ss(256), ss4096(4096), ss_uniform(256);
  MisraGries<std::int64_t> mg(256), mg4096(4096), mg_uniform(256);
  CountMin<std::int64_t> cm(2048, 5, 42);
  CountSketch<std::int64_t> cs(2048, 5, 42);
  CountMin<std::int64_t> cm32(256, 32, 42);
  SpaceSaving<std::string> ss_str(256);
  // Zhao's shape for L = 32, gamma = 1% (9 x 1608, 13 exact levels), fed through its batch path on
  // 32-bit items (the uniform stream's values spread over [0, 2^32) by a fixed odd multiplier), in
  // batches of its internal chunk.
  dyadic::DyadicCountSketch dyadic32(32, 1608, 9, 42);
  std::vector<std::uint64_t> items32(uniform.size());
  for (std::size_t i = 0; i < uniform.size(); ++i)
    items32[i] = (static_cast<std::uint64_t>(uniform[i]) * 0x9E3779B1u) & 0xFFFFFFFFu;

  auto counter = [&](auto& s, const auto& xs) {
    return [&s, &xs, cpu](std::size_t b, std::size_t c) { return timed_pass(s, xs, b, c, cpu); };
  };
  std::vector<Path> paths;
  paths.push_back({"spacesaving_int_k256", kBaseChunk, counter(ss, ints)});
  paths.push_back({"misragries_int_k256", kBaseChunk, counter(mg, ints)});
  paths.push_back({"spacesaving_int_k4096", kBaseChunk, counter(ss4096, ints)});
  paths.push_back({"misragries_int_k4096", kBaseChunk, counter(mg4096, ints)});
  paths.push_back({"spacesaving_uniform_k256", kBaseChunk, counter(ss_uniform, uniform)});
  paths.push_back({"misragries_uniform_k256", kBaseChunk, counter(mg_uniform, uniform)});
  paths.push_back({"countmin_int_2048x5", kBaseChunk, counter(cm, ints)});
  paths.push_back({"countsketch_int_2048x5", kBaseChunk, counter(cs, ints)});
  paths.push_back({"countmin_int_256x32", kBaseChunk >> 2, counter(cm32, ints)});
  paths.push_back({"spacesaving_str_k256", kBaseChunk, counter(ss_str, strs.keys)});
  paths.push_back({"dyadic_l32_batch", std::size_t{1} << 14, [&](std::size_t b, std::size_t c) {
                     const double t0 = bench::clock_seconds(cpu);
                     dyadic32.update_many(items32.data() + b, nullptr, c);
                     const double t1 = bench::clock_seconds(cpu);
                     bench::g_sink = bench::g_sink + static_cast<std::uint64_t>(dyadic32.n());
                     return t1 - t0;
                   }});
  if (list) {
    for (const auto& p : paths) std::printf("%s\n", p.name.c_str());
    return 0;
  }
  for (const auto& [name, k] : slow) {
    auto it = std::find_if(paths.begin(), paths.end(), [&](const Path& p) { return p.name == name; });
    if (it == paths.end()) usage(("--slow: unknown path " + name).c_str());
    it->repeat = k;
  }
  if (!only.empty()) {
    for (const auto& name : only)
      if (std::none_of(paths.begin(), paths.end(), [&](const Path& p) { return p.name == name; }))
        usage(("--paths: unknown path " + name).c_str());
    paths.erase(std::remove_if(paths.begin(), paths.end(),
                               [&](const Path& p) { return std::find(only.begin(), only.end(), p.name) == only.end(); }),
                paths.end());
  }

  // Warm-up: fills the maps and summaries (steady state from the first timed round on).
  timed_pass(yardstick, yard_items, 0, items, cpu);
  for (auto& p : paths) p.run(0, items);

  // Path by path (a path's figure then does not depend on which other paths are measured), rounds
  // of one yardstick pass next to one path pass; which goes first alternates.
  for (Path& p : paths) {
    const std::size_t base_chunks = items / kBaseChunk, path_chunks = items / p.chunk;
    auto base = [&](int r) {  // seconds per item of a timed pass over chunk r (after chunk r - 1)
      timed_pass(yardstick, yard_items, (std::size_t(r + base_chunks - 1) % base_chunks) * kBaseChunk, kBaseChunk, cpu);
      return timed_pass(yardstick, yard_items, (std::size_t(r) % base_chunks) * kBaseChunk, kBaseChunk, cpu) /
             double(kBaseChunk);
    };
    auto path = [&](int r) {
      const std::size_t begin = (std::size_t(r) % path_chunks) * p.chunk;
      p.run((std::size_t(r + path_chunks - 1) % path_chunks) * p.chunk, p.chunk);
      double t = 0;
      for (int k = 0; k < p.repeat; ++k) t += p.run(begin, p.chunk);
      return t / double(p.chunk);
    };
    for (int r = 0; r < rounds; ++r) {
      double base_s, path_s;  // seconds per item
      if (r % 2 == 0) {
        base_s = base(r);
        path_s = path(r);
      } else {
        path_s = path(r);
        base_s = base(r);
      }
      p.base_ns.push_back(base_s * 1e9);
      p.ns.push_back(path_s * 1e9);
    }
  }

  auto json_list = [](const std::vector<double>& v) {
    std::string out = "[";
    char buf[32];
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, i ? ", %.3f" : "%.3f", v[i]);
      out += buf;
    }
    return out + "]";
  };
  std::printf("{\n  \"items\": %zu,\n  \"rounds\": %d,\n  \"clock\": \"%s\",\n  \"paths\": {\n", items, rounds,
              cpu ? "cpu" : "wall");
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const Path& p = paths[i];
    std::printf("    \"%s\": {\"base_ns\": %s, \"ns\": %s}%s\n", p.name.c_str(), json_list(p.base_ns).c_str(), json_list(p.ns).c_str(), i + 1 < paths.size() ? "," : "");
  }
  std::printf("  }\n}\n");
  return 0;
}
