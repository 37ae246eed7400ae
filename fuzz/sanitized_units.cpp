// The C++ unit paths under AddressSanitizer + UndefinedBehaviorSanitizer (fuzz/build.sh): every
// structure's main operations, its bytes round trip, its release, the stream limit and crafted
// bytes. Any sanitizer report or failed check exits non-zero. Also holds the regression cases of
// what fuzzing found (see docs/hardening.md).
#include <cstdio>
#include <optional>
#include <vector>

#include "fuzz_common.hpp"

namespace {

using namespace dpsketch;
using namespace fuzz;

template <class Key>
std::vector<Key> stream(std::size_t n) {
  std::vector<Key> out;
  std::uint64_t x = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto b = static_cast<std::uint8_t>((x >> 33) % 40 < 20 ? (x >> 40) % 4 : (x >> 40) % 256);  // skewed
    if constexpr (std::is_same_v<Key, I64>) out.push_back(int_key(b));
    else out.push_back(str_key(b));
  }
  return out;
}

template <class T>
T reloaded(const T& s) {
  T r = T::deserialize(s.serialize());
  FUZZ_CHECK(r.serialize() == s.serialize());
  return r;
}

template <class T>
void limit_refused(T& s, const typename T::key_type& k) {
  const std::string before = s.serialize();
  bool threw = false;
  try {
    s.update(k);
  } catch (const StreamLimitError&) {
    threw = true;
  }
  FUZZ_CHECK(threw);
  std::vector<typename T::key_type> two{k, k};
  threw = false;
  try {
    s.update_many(two.begin(), two.end());
  } catch (const StreamLimitError&) {
    threw = true;
  }
  FUZZ_CHECK(threw);
  FUZZ_CHECK(s.serialize() == before);
}

template <class T>
void rejected(std::string_view bytes) {
  bool threw = false;
  try {
    (void)T::deserialize(bytes);
  } catch (const DeserializeError&) {
    threw = true;
  }
  FUZZ_CHECK(threw);
}

std::string le64(std::uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string le32(std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string header(std::uint8_t family, std::uint8_t tag) {
  return std::string("DPSK") + char(1) + char(family) + char(tag) + char(0);
}

template <class Key>
void counters() {
  constexpr std::uint8_t tag = KeyTraits<Key>::tag;
  const auto xs = stream<Key>(5000);
  release::SecureRng rng(11);
  {
    SpaceSaving<Key> ss(16);
    ss.update_many(xs.begin(), xs.begin() + 2500);
    for (auto it = xs.begin() + 2500; it != xs.end(); ++it) ss.update(*it);
    FUZZ_CHECK(ss.n() == xs.size() && ss.size() == 16);
    std::uint64_t total = 0;
    for (const auto& kc : ss.items()) total += kc.second;
    FUZZ_CHECK(total == ss.n());
    auto r = reloaded(ss);
    r.update(xs[0]);
    ss.update(xs[0]);
    FUZZ_CHECK(r.serialize() == ss.serialize());
    const auto rel = release::dpss(ss, 1.0, 1e-6, 4, release::Length::fixed(ss.n()), rng);
    FUZZ_CHECK(rel.threshold > 0 && rel.items.size() <= 16);
    // Stream limit: bytes exactly at 2^62 load; the next update is refused, nothing changes.
    const Key k = xs[0];
    ByteWriter w;
    w.header(Family::space_saving, tag);
    w.u32(2);
    w.u64(kMaxStreamLength);
    w.u32(1);
    KeyTraits<Key>::write(w, k);
    w.u64(kMaxStreamLength);
    const std::string at_limit = w.take();
    auto full = SpaceSaving<Key>::deserialize(at_limit);
    limit_refused(full, k);
    (void)release::dpss(full, 1.0, 1e-6, 1, release::Length::fixed(full.n()), rng);
    // A count of 2^64 - 2 (past the 2^62 limit) must not load.
    std::string crafted = at_limit;
    crafted.replace(12, 8, le64(~std::uint64_t{1}));
    crafted.replace(crafted.size() - 8, 8, le64(~std::uint64_t{1}));
    rejected<SpaceSaving<Key>>(crafted);
    // A capacity of 2^24 in 24 bytes must not be allocated.
    rejected<SpaceSaving<Key>>(header(2, tag) + le32(1u << 24) + le64(0) + le32(0));
  }
  {
    MisraGries<Key> mg(16);
    mg.update_many(xs.begin(), xs.end());
    FUZZ_CHECK(mg.n() == xs.size());
    auto r = reloaded(mg);
    r.update(xs[1]);
    mg.update(xs[1]);
    FUZZ_CHECK(r.serialize() == mg.serialize());
    (void)release::pmg(mg, 1.0, 1e-6, std::nullopt, release::Length::unused(), rng);
    (void)release::pmg(mg, 1.0, 1e-6, 4, release::Length::noisy(mg.n(), 0.5, 0.0, rng), rng);
    ByteWriter w;
    w.header(Family::misra_gries, tag);
    w.u32(1);
    w.u64(kMaxStreamLength);
    w.u64(0);
    w.u32(1);
    KeyTraits<Key>::write(w, xs[0]);
    w.u64(kMaxStreamLength);
    w.u32(0);
    const std::string at_limit = w.take();
    auto full = MisraGries<Key>::deserialize(at_limit);
    limit_refused(full, xs[0]);
    std::string crafted = at_limit;
    crafted.replace(12, 8, le64(~std::uint64_t{1}));
    crafted.replace(crafted.size() - 12, 8, le64(~std::uint64_t{1}));
    rejected<MisraGries<Key>>(crafted);
  }
}

template <class Key, SketchKind Kind>
void sketches() {
  using S = LinearSketch<Key, Kind>;
  const auto xs = stream<Key>(3000);
  S a(64, 5, 99), b(64, 5, 99);
  a.update_many(xs.begin(), xs.begin() + 1500);
  for (auto it = xs.begin() + 1500; it != xs.end(); ++it) b.update(*it);
  auto r = reloaded(a);
  r.merge(b);
  a.merge(b);
  FUZZ_CHECK(a.serialize() == r.serialize() && static_cast<std::size_t>(a.n()) == xs.size());
  if constexpr (Kind == SketchKind::count_min) FUZZ_CHECK(a.estimate(xs[0]) >= 1);
  {  // a counted batch equals the same counted updates one by one (int and string keys alike)
    std::vector<std::int64_t> cs;
    for (std::size_t k = 0; k < 100; ++k) cs.push_back(static_cast<std::int64_t>(k % 7) - 3);
    S one(64, 5, 7), many(64, 5, 7);
    for (std::size_t k = 0; k < cs.size(); ++k) one.update(xs[k], cs[k]);
    many.update_many_counted(xs, cs.data(), cs.size());
    FUZZ_CHECK(one.serialize() == many.serialize());
  }
  // Cells past the limit do not load; a merge past the limit is refused and changes nothing.
  ByteWriter w;
  w.header(S::family, KeyTraits<Key>::tag);
  w.u32(1);
  w.u32(1);
  w.u64(3);
  w.u64(kMaxStreamLength);
  w.i64(Kind == SketchKind::count_min ? static_cast<std::int64_t>(kMaxStreamLength) : -static_cast<std::int64_t>(kMaxStreamLength));
  const std::string at_limit = w.take();
  auto full = S::deserialize(at_limit);
  limit_refused(full, xs[0]);
  bool threw = false;
  try {
    auto copy = full;
    full.merge(copy);
  } catch (const std::overflow_error&) {
    threw = true;
  }
  FUZZ_CHECK(threw && full.serialize() == at_limit);
  std::string crafted = at_limit;
  crafted.replace(24, 8, le64(INT64_MAX));
  crafted.replace(32, 8, le64(Kind == SketchKind::count_min ? INT64_MAX : static_cast<std::uint64_t>(INT64_MIN + 1)));
  rejected<S>(crafted);

  // Private sketches, with and without the F2 row. Regression (fuzzing): deserializing a private
  // sketch without F2 row passed a null pointer to memcpy (size 0), undefined behaviour.
  for (const bool f2 : {false, true}) {
    release::SecureRng rng(5);
    const release::NoiseSpec spec{release::NoiseKind::laplace, noise::Rational{5, 1}, 0};
    release::PrivateSketch<Key, Kind> p(64, 5, 7, spec, f2 && Kind == SketchKind::count_sketch, rng);
    p.update_many(xs.begin(), xs.end());
    auto q = release::PrivateSketch<Key, Kind>::deserialize(p.serialize());
    FUZZ_CHECK(q.serialize() == p.serialize());
    q.update(xs[2]);
    p.update(xs[2]);
    FUZZ_CHECK(q.serialize() == p.serialize());
    (void)p.estimate(xs[3]);
    (void)p.f2_upper(2.0L);
    // The published form: n and the length-derived mass dropped, canonical bytes, read-only.
    q.withhold_length();
    const std::string pub = q.serialize();
    auto r = release::PrivateSketch<Key, Kind>::deserialize(pub);
    FUZZ_CHECK(r.length_withheld() && r.n() == 0 && r.serialize() == pub);
    bool refused = false;
    try {
      r.update(xs[0]);
    } catch (const release::LengthWithheldError&) {
      refused = true;
    }
    FUZZ_CHECK(refused && r.serialize() == pub);
  }
  // The envelope wrapper.
  release::SecureRng rng(3);
  release::EnvelopeParams params;
  params.k = 2;
  params.capacity = 8;
  params.epsilon = 1.0;
  params.delta = 1e-3;
  params.max_stream_length = 10000;
  release::SketchHeavyHitters<Key, Kind> hh(params, 17, rng);
  hh.update_many(xs.begin(), xs.end());
  FUZZ_CHECK(hh.n() == xs.size() && hh.candidates() <= 8);
  (void)hh.release(release::Length::fixed(hh.n()));
  (void)hh.release(release::Length::noisy(hh.n(), 0.5, 1e-6, rng));
}

}  // namespace

// Every member of every summary and sketch compiles for both key types (explicit instantiation).
template class dpsketch::LinearSketch<I64, SketchKind::count_min>;
template class dpsketch::LinearSketch<Str, SketchKind::count_min>;
template class dpsketch::LinearSketch<I64, SketchKind::count_sketch>;
template class dpsketch::LinearSketch<Str, SketchKind::count_sketch>;
template class dpsketch::release::PrivateSketch<I64, SketchKind::count_min>;
template class dpsketch::release::PrivateSketch<Str, SketchKind::count_min>;
template class dpsketch::release::PrivateSketch<I64, SketchKind::count_sketch>;
template class dpsketch::release::PrivateSketch<Str, SketchKind::count_sketch>;
template class dpsketch::SpaceSaving<I64>;
template class dpsketch::SpaceSaving<Str>;
template class dpsketch::MisraGries<I64>;
template class dpsketch::MisraGries<Str>;

int main() {
  counters<I64>();
  counters<Str>();
  sketches<I64, SketchKind::count_min>();
  sketches<Str, SketchKind::count_min>();
  sketches<I64, SketchKind::count_sketch>();
  sketches<Str, SketchKind::count_sketch>();
  std::puts("sanitized unit paths: all checks passed");
  return 0;
}
