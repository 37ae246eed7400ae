// libFuzzer target: every from_bytes (deserialize) of the core, all families and both key types.
// Whatever the input, a deserializer either throws DeserializeError (ValueError in Python) or
// returns an object that (1) re-serializes to exactly the input, (2) survives updates, estimates,
// listing and releases without any sanitizer report, and (3) refuses updates only at the stream
// limit, with StreamLimitError, or (a private sketch whose length is withheld, i.e. a published
// copy) always, with LengthWithheldError -- and nothing changed.
#include <optional>
#include <vector>

#include "fuzz_common.hpp"

namespace {

using namespace dpsketch;
using namespace fuzz;

// Whether one more unit update passes the limit: n for the counter summaries, the mass (total
// |count| plus the starting max |cell|, kMaxCellMass) for the sketches.
template <class K>
bool at_limit(const SpaceSaving<K>& s) { return s.n() >= kMaxStreamLength; }
template <class K>
bool at_limit(const MisraGries<K>& s) { return s.n() >= kMaxStreamLength; }
template <class K, SketchKind Kd>
bool at_limit(const LinearSketch<K, Kd>& s) { return s.mass() >= kMaxCellMass; }
template <class K, SketchKind Kd>
bool at_limit(const release::PrivateSketch<K, Kd>& s) { return s.sketch().mass() >= kMaxCellMass; }
template <class T>
bool read_only(const T&) { return false; }
template <class K, SketchKind Kd>
bool read_only(const release::PrivateSketch<K, Kd>& s) { return s.length_withheld(); }

// Updates that must succeed below the limit and fail cleanly at it.
template <class T>
void poke(T& s) {
  using Key = typename T::key_type;
  for (std::uint8_t b = 0; b < 6; ++b) {
    const std::string before = s.serialize();
    const auto n = s.n();
    const bool full = at_limit(s);
    try {
      s.update(key_of<Key>(b));
      FUZZ_CHECK(!full && !read_only(s) && s.n() == n + 1);
    } catch (const StreamLimitError&) {
      FUZZ_CHECK(full && !read_only(s));
      FUZZ_CHECK(s.serialize() == before);
    } catch (const release::LengthWithheldError&) {
      FUZZ_CHECK(read_only(s) && s.n() == 0);
      FUZZ_CHECK(s.serialize() == before);
    }
  }
}

template <class T>
void roundtrip(const T& s, std::string_view input) {
  const std::string out = s.serialize();
  FUZZ_CHECK(out == input);  // the format is canonical: accepted bytes are exactly what we write
}

template <class Key>
void counters(std::string_view in) {
  release::SecureRng rng(7);
  try {
    auto ss = SpaceSaving<Key>::deserialize(in);
    roundtrip(ss, in);
    std::uint64_t total = 0;
    for (const auto& [k, c] : ss.items()) {
      total += c;
      FUZZ_CHECK(ss.estimate(k) == c);
    }
    // A merged summary (header flag bit 0) may have lost mass in the merge: Σc <= n (docs/format.md).
    FUZZ_CHECK(ss.merged() ? total <= ss.n() : total == ss.n());
    try {
      (void)release::dpss(ss, 1.0, 1e-6, 1, release::Length::fixed(ss.n()), rng);
      (void)release::dpss(ss, 0.5, 1e-6, 1, release::Length::noisy(ss.n(), 0.5, 1e-6, rng), rng);
      FUZZ_CHECK(!ss.merged());
    } catch (const ParameterError&) {
      FUZZ_CHECK(ss.merged());  // private release of a merged summary is refused (§8)
    }
    poke(ss);
    auto again = SpaceSaving<Key>::deserialize(ss.serialize());
    FUZZ_CHECK(again.serialize() == ss.serialize());
  } catch (const DeserializeError&) {
  }
  try {
    auto mg = MisraGries<Key>::deserialize(in);
    roundtrip(mg, in);
    for (const auto& [k, c] : mg.items(true)) FUZZ_CHECK(mg.estimate(k) == c);
    try {
      (void)release::pmg(mg, 1.0, 1e-6, std::nullopt, release::Length::unused(), rng);
      (void)release::pmg(mg, 1.0, 1e-6, 2, release::Length::noisy(mg.n(), 0.5, 0.0, rng), rng);
      FUZZ_CHECK(!mg.merged());
    } catch (const ParameterError&) {
      FUZZ_CHECK(mg.merged());  // private release of a merged summary is refused (§8)
    }
    poke(mg);
    auto again = MisraGries<Key>::deserialize(mg.serialize());
    FUZZ_CHECK(again.serialize() == mg.serialize());
  } catch (const DeserializeError&) {
  }
}

template <class Key, SketchKind Kind>
void sketches(std::string_view in) {
  try {
    auto s = LinearSketch<Key, Kind>::deserialize(in);
    roundtrip(s, in);
    for (std::uint8_t b = 0; b < 4; ++b) (void)s.estimate(key_of<Key>(b));
    auto copy = s;
    try {
      copy.merge(s);
      FUZZ_CHECK(copy.n() == 2 * s.n());
    } catch (const std::overflow_error&) {
      FUZZ_CHECK(copy.serialize() == s.serialize());  // unchanged
    }
    poke(s);
  } catch (const DeserializeError&) {
  }
  try {
    auto p = release::PrivateSketch<Key, Kind>::deserialize(in);
    roundtrip(p, in);
    for (std::uint8_t b = 0; b < 4; ++b) (void)p.estimate(key_of<Key>(b));
    (void)p.f2_upper(3.0L);
    poke(p);
  } catch (const DeserializeError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  counters<I64>(in);
  counters<Str>(in);
  sketches<I64, SketchKind::count_min>(in);
  sketches<Str, SketchKind::count_min>(in);
  sketches<I64, SketchKind::count_sketch>(in);
  sketches<Str, SketchKind::count_sketch>(in);
  return 0;
}
