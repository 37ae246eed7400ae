// Differential test of the counter core: the library's SpaceSaving / MisraGries
// (cpp/include/dpsketch/counters/, "New") against the brute-force reference counters
// (tests/native/reference_counters.hpp, "Ref": the rules of docs/algorithms.md §2-§3 as linear
// scans) on random operation sequences. After every operation both must agree exactly on items()
// (in structure order), min_count() / decrements(), n, size, estimates and contains(); after every
// serialization, and at the end of each sequence, on the bytes.
//
// Operations: single updates, batch updates, merges with a summary built from another random
// stream, and serialize -> deserialize round trips (each side continues from its own bytes). Key
// universes are small relative to the capacity, so hits, evictions, ties, decrements and reuse of
// count-0 keys are all frequent. Capacities 1..12 mostly, sometimes up to 300 (to exercise the
// zero-stack re-layout and long stages).
//
// Usage: counters_differential <sequences> [seed] [golden-spec]     exit 0 iff everything agreed.
// golden-spec (written by tests/sketches/test_counters_differential.py) lists golden counter blobs
// (tests/data/golden) with the streams that made them: the reference must build each blob's exact
// bytes from its stream, read and rewrite it unchanged, and agree with the library reading it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "reference_counters.hpp"

namespace {

using Rng = std::mt19937_64;

std::uint64_t g_sequence = 0;
std::string g_golden;  // the golden blob being checked, if any
[[noreturn]] void fail(const char* what, const char* family) {
  if (g_golden.empty())
    std::fprintf(stderr, "MISMATCH in sequence %llu (%s): %s\n", static_cast<unsigned long long>(g_sequence), family, what);
  else
    std::fprintf(stderr, "MISMATCH on golden blob %s (%s): %s\n", g_golden.c_str(), family, what);
  std::exit(1);
}

// In one sequence of 4 (int keys), keys are crafted so that their slot-table hashes share the low
// 4 bits: they crowd a few buckets, so entries are displaced and the table's overflow paths run.
bool g_colliding = false;

// Inverse of KeyTraits<int64>::table_hash: h = m ^ (m >> 32) with m = k * golden (both bijections).
std::int64_t key_with_hash(std::uint64_t h) {
  const std::uint64_t m = h ^ (h >> 32);
  std::uint64_t inv = 0x9e3779b97f4a7c15ULL;  // Newton iteration for the inverse of an odd number mod 2^64
  for (int i = 0; i < 6; ++i) inv *= 2 - 0x9e3779b97f4a7c15ULL * inv;
  return static_cast<std::int64_t>(m * inv);
}

template <class Key>
Key make_key(std::uint64_t v) {
  if constexpr (std::is_same_v<Key, std::string>) {
    return "k" + std::to_string(v);
  } else {
    if (g_colliding) return key_with_hash((v * 0x2545F4914F6CDD1DULL) << 4 | 5);  // low 4 bits fixed
    return static_cast<std::int64_t>(v) - 3;  // some negative keys too
  }
}

struct SsPair {
  template <class Key> using New = dpsketch::SpaceSaving<Key>;
  template <class Key> using Ref = reference::SpaceSaving<Key>;
  static constexpr const char* name = "SpaceSaving";
  template <class N, class R>
  static void compare_extra(const N& a, const R& b) {
    if (a.min_count() != b.min_count()) fail("min_count", name);
    if (a.size() != b.size()) fail("size", name);
    if (a.floor() != b.floor()) fail("floor", name);
  }
  template <class S>
  static auto all_items(const S& s) { return s.items(); }
};

struct MgPair {
  template <class Key> using New = dpsketch::MisraGries<Key>;
  template <class Key> using Ref = reference::MisraGries<Key>;
  static constexpr const char* name = "MisraGries";
  template <class N, class R>
  static void compare_extra(const N& a, const R& b) {
    if (a.decrements() != b.decrements()) fail("decrements", name);
  }
  template <class S>
  static auto all_items(const S& s) { return s.items(true); }
};

template <class P, class Key>
struct Run {
  using New = typename P::template New<Key>;
  using Ref = typename P::template Ref<Key>;

  static void compare(const New& a, const Ref& b, Rng& rng, std::uint64_t universe, bool bytes) {
    if (a.n() != b.n()) fail("n", P::name);
    if (a.merged() != b.merged()) fail("merged", P::name);
    P::compare_extra(a, b);
    if (P::all_items(a) != P::all_items(b)) fail("items", P::name);
    for (int i = 0; i < 4; ++i) {
      const Key k = make_key<Key>(rng() % (universe + 2));
      if (a.estimate(k) != b.estimate(k)) fail("estimate", P::name);
      if (a.contains(k) != b.contains(k)) fail("contains", P::name);
    }
    if (bytes && a.serialize() != b.serialize()) fail("bytes", P::name);
  }

  static void feed(New& a, Ref& b, Rng& rng, std::uint64_t universe, std::size_t len, bool batch) {
    std::vector<Key> xs(len);
    // Mix of a skewed head (hits) and uniform tail (misses).
    for (auto& x : xs) x = make_key<Key>(rng() % 3 == 0 ? rng() % (universe / 4 + 1) : rng() % universe);
    if (batch) {
      a.update_many(xs.begin(), xs.end());
      b.update_many(xs.begin(), xs.end());
    } else {
      for (const auto& x : xs) {
        a.update(x);
        b.update(x);
      }
    }
  }

  static void sequence(Rng& rng) {
    g_colliding = rng() % 4 == 0;
    const std::uint32_t capacity = rng() % 16 == 0 ? 1 + rng() % 300 : 1 + rng() % 12;
    const std::uint64_t universe = 1 + rng() % (3 * capacity + 4);
    New a(capacity);
    Ref b(capacity);
    const int ops = 1 + static_cast<int>(rng() % 40);
    for (int op = 0; op < ops; ++op) {
      const unsigned r = rng() % 100;
      bool bytes = false;
      if (r < 70) {
        feed(a, b, rng, universe, 1 + rng() % (capacity < 50 ? 6 : 2 * capacity), false);
      } else if (r < 85) {
        feed(a, b, rng, universe, 1 + rng() % (4 * capacity + 8), true);
      } else if (r < 92) {
        New a2(capacity);
        Ref b2(capacity);
        feed(a2, b2, rng, universe, rng() % (3 * capacity + 5), false);
        if (rng() % 2) {
          a.merge(a2);
          b.merge(b2);
        } else {  // the other way round: the result becomes ours
          a2.merge(a);
          b2.merge(b);
          a = std::move(a2);
          b = std::move(b2);
        }
      } else {
        const std::string ba = a.serialize(), bb = b.serialize();
        if (ba != bb) fail("bytes before round trip", P::name);
        a = New::deserialize(ba);
        b = Ref::deserialize(bb);
        bytes = true;
      }
      compare(a, b, rng, universe, bytes);
    }
    compare(a, b, rng, universe, true);
  }

  // One golden blob (header comment): `bytes` was written by a summary of `capacity` fed `stream`,
  // merged with one fed `merge_stream` when `merged`, then given the release count and untyped mark.
  static void golden(const std::string& bytes, std::uint32_t capacity, bool merged, const std::vector<Key>& stream,
                     const std::vector<Key>& merge_stream, std::uint64_t release_count, bool untyped, Rng& rng) {
    Ref built(capacity);
    built.update_many(stream.begin(), stream.end());
    if (merged) {
      Ref other(capacity);
      other.update_many(merge_stream.begin(), merge_stream.end());
      built.merge(other);
    }
    built.set_release_count(release_count);
    built.set_untyped(untyped);
    if (built.serialize() != bytes) fail("the reference built from the stream writes other bytes", P::name);
    Ref b = Ref::deserialize(bytes);
    if (b.serialize() != bytes) fail("the reference reads and rewrites other bytes", P::name);
    New a = New::deserialize(bytes);
    compare(a, b, rng, 12, true);
    // Both continue from the blob: the stream once more, then keys neither holds.
    for (std::uint64_t v = 0; v < stream.size() + 12; ++v) {
      const Key x = v < stream.size() ? stream[v] : make_key<Key>(100 + v);
      a.update(x);
      b.update(x);
      compare(a, b, rng, 12, false);
    }
    compare(a, b, rng, 12, true);
  }
};

std::string from_hex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

// A comma-separated list of hex-encoded key texts ("-": empty); int keys are decimal texts.
template <class Key>
std::vector<Key> parse_stream(const std::string& field) {
  std::vector<Key> out;
  if (field == "-") return out;
  std::stringstream ss(field);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if constexpr (std::is_same_v<Key, std::string>) out.push_back(from_hex(tok));
    else out.push_back(std::stoll(from_hex(tok)));
  }
  return out;
}

// Each line: family (MisraGries|SpaceSaving) key_type (int|str) capacity merged(0|1)
// release_count untyped(0|1) blob_path stream merge_stream. Returns the number of blobs checked.
int check_golden(const char* spec_path, Rng& rng) {
  std::ifstream spec(spec_path);
  if (!spec) {
    std::fprintf(stderr, "cannot read %s\n", spec_path);
    std::exit(2);
  }
  int checked = 0;
  std::string family, key_type, path, stream, merge_stream;
  std::uint32_t capacity;
  int merged, untyped;
  std::uint64_t release_count;
  while (spec >> family >> key_type >> capacity >> merged >> release_count >> untyped >> path >> stream >> merge_stream) {
    std::ifstream blob(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(blob)), std::istreambuf_iterator<char>());
    if (bytes.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      std::exit(2);
    }
    g_golden = path;
    const bool mg = family == "MisraGries", str = key_type == "str";
    if (mg && str)
      Run<MgPair, std::string>::golden(bytes, capacity, merged, parse_stream<std::string>(stream),
                                       parse_stream<std::string>(merge_stream), release_count, untyped, rng);
    else if (mg)
      Run<MgPair, std::int64_t>::golden(bytes, capacity, merged, parse_stream<std::int64_t>(stream),
                                        parse_stream<std::int64_t>(merge_stream), release_count, untyped, rng);
    else if (str)
      Run<SsPair, std::string>::golden(bytes, capacity, merged, parse_stream<std::string>(stream),
                                       parse_stream<std::string>(merge_stream), release_count, untyped, rng);
    else
      Run<SsPair, std::int64_t>::golden(bytes, capacity, merged, parse_stream<std::int64_t>(stream),
                                        parse_stream<std::int64_t>(merge_stream), release_count, untyped, rng);
    ++checked;
  }
  g_golden.clear();
  return checked;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <sequences> [seed] [golden-spec]\n", argv[0]);
    return 2;
  }
  const std::uint64_t sequences = std::strtoull(argv[1], nullptr, 10);
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261130;
  for (std::uint64_t v = 0; v < 1000; ++v)  // the crafted keys really collide
    if ((dpsketch::KeyTraits<std::int64_t>::table_hash(key_with_hash(v << 4 | 5)) & 15) != 5) {
      std::fprintf(stderr, "key_with_hash is not the inverse of table_hash\n");
      return 1;
    }
  Rng rng(seed);
  const int golden = argc > 3 ? check_golden(argv[3], rng) : 0;
  std::uint64_t per[4] = {0, 0, 0, 0};
  for (g_sequence = 0; g_sequence < sequences; ++g_sequence) {
    const unsigned which = static_cast<unsigned>(rng() % 8);  // strings in 1 of 4 sequences
    switch (which) {
      case 0: Run<SsPair, std::string>::sequence(rng); ++per[2]; break;
      case 1: Run<MgPair, std::string>::sequence(rng); ++per[3]; break;
      default:
        if (which % 2) { Run<MgPair, std::int64_t>::sequence(rng); ++per[1]; }
        else { Run<SsPair, std::int64_t>::sequence(rng); ++per[0]; }
    }
  }
  std::printf("agreed on %llu sequences (SpaceSaving int %llu, MisraGries int %llu, SpaceSaving str %llu, MisraGries str %llu)"
              " and %d golden blobs\n",
              static_cast<unsigned long long>(sequences), static_cast<unsigned long long>(per[0]),
              static_cast<unsigned long long>(per[1]), static_cast<unsigned long long>(per[2]),
              static_cast<unsigned long long>(per[3]), golden);
  return 0;
}
