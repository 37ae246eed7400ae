// libFuzzer target: random operation sequences on every structure of the header-only core, both
// key types. The first bytes choose the structure and its parameters; each following byte pair
// is an operation (update, update_many, estimate, items, bytes round trip, release with a fixed
// seed, merge). An exact reference count checks each structure's guarantee after every estimate:
//   SpaceSaving  f(x) <= c(x) <= f(x) + min_count, sum of counts == n   (docs/algorithms.md §3)
//   Misra-Gries  f(x) - n/(m+1) <= c(x) <= f(x)                          (docs/algorithms.md §2)
//   Count-Min    c(x) >= f(x)                                            (docs/algorithms.md §4)
// and a bytes round trip must continue exactly like the original.
#include <map>
#include <optional>
#include <vector>

#include "fuzz_common.hpp"

namespace {

using namespace dpsketch;
using namespace fuzz;

template <class T, class Key>
void check_guarantee(const T& s, const std::map<Key, std::uint64_t>& f, std::uint64_t n, const Key& x) {
  const auto it = f.find(x);
  const std::uint64_t fx = it == f.end() ? 0 : it->second;
  if constexpr (std::is_same_v<T, SpaceSaving<Key>>) {
    const std::uint64_t c = s.estimate(x);
    if (s.contains(x)) FUZZ_CHECK(fx <= c && c <= fx + s.min_count());
    else FUZZ_CHECK(fx <= s.min_count());
    std::uint64_t total = 0;
    for (const auto& kc : s.items()) total += kc.second;
    FUZZ_CHECK(total == n);
  } else if constexpr (std::is_same_v<T, MisraGries<Key>>) {
    const std::uint64_t c = s.estimate(x);
    FUZZ_CHECK(c <= fx);
    FUZZ_CHECK(fx - c <= n / (std::uint64_t{s.capacity()} + 1));
  } else if constexpr (std::is_same_v<T, CountMin<Key>>) {
    FUZZ_CHECK(s.estimate(x) >= static_cast<std::int64_t>(fx));
  } else {
    (void)s.estimate(x);
  }
}

template <class T, class = void>
struct has_release : std::false_type {};
template <class T>
struct has_release<T, std::void_t<decltype(std::declval<const T&>().release(std::declval<const release::Length&>()))>>
    : std::true_type {};

template <class T>
void release_of(const T& s, std::uint8_t b) {
  release::SecureRng rng(b);
  const release::Length len = (b & 1) ? release::Length::noisy(s.n(), 0.5, 1e-6, rng) : release::Length::fixed(s.n());
  if constexpr (std::is_same_v<T, SpaceSaving<typename T::key_type>>) {
    (void)release::dpss(s, 1.0, 1e-6, 1 + b % s.capacity(), len, rng);
  } else if constexpr (std::is_same_v<T, MisraGries<typename T::key_type>>) {
    (void)release::pmg(s, 1.0, 1e-6, (b & 2) ? std::optional<std::uint64_t>(1 + b % 5) : std::nullopt, len, rng);
  } else if constexpr (has_release<T>::value) {
    try {
      (void)s.release(len);
    } catch (const ParameterError&) {  // stream longer than max_stream_length: refused, by design
      FUZZ_CHECK(s.n() > s.params().max_stream_length);
    }
  }
}

template <class T, class = void>
struct serializable : std::false_type {};
template <class T>
struct serializable<T, std::void_t<decltype(T::deserialize(std::string_view{}))>> : std::true_type {};
template <class T, class = void>
struct mergeable : std::false_type {};
template <class T>
struct mergeable<T, std::void_t<decltype(std::declval<T&>().merge(std::declval<const T&>()))>> : std::true_type {};
// Counter summaries merge too (§8), but a merged summary has a different guarantee (and no private
// release); merges of counters are checked against exact counts over random merge trees in
// tests/sketches/test_merge.py, so the self-merge step here is for the linear sketches.
template <class T>
inline constexpr bool is_counter_summary_v = std::is_same_v<T, SpaceSaving<typename T::key_type>> ||
                                             std::is_same_v<T, MisraGries<typename T::key_type>>;
template <class T, class = void>
struct lists_items : std::false_type {};
template <class T>
struct lists_items<T, std::void_t<decltype(std::declval<const T&>().items())>> : std::true_type {};

// Runs an update of `more` items; returns false when it was refused, which must happen exactly
// when n + more passes the limit (2^62, reachable here by repeated self-merges; for the sketches
// the limit is on the mass, which equals n here: no noise, unit updates) and must leave the
// structure unchanged. Private sketches start with mass = max |noise| but cannot merge.
template <class T, class F>
bool refused_at_limit(T& s, std::uint64_t n, std::uint64_t more, F&& update) {
  const bool over = more > kMaxStreamLength - n;
  std::string before;
  if constexpr (serializable<T>::value)
    if (over) before = s.serialize();
  try {
    update();
  } catch (const StreamLimitError&) {
    FUZZ_CHECK(over);
    FUZZ_CHECK(s.n() == n);
    if constexpr (serializable<T>::value) FUZZ_CHECK(s.serialize() == before);
    return false;
  }
  FUZZ_CHECK(!over);
  return true;
}

template <class T>
void run(T s, Cursor& in) {
  using Key = typename T::key_type;
  std::map<Key, std::uint64_t> f;
  std::uint64_t n = 0;
  std::optional<T> twin;  // a bytes round trip of s, fed the same operations since
  // At most 128 operations per input keeps executions fast (longer inputs add nothing new).
  for (int ops = 0; ops < 128 && !in.done(); ++ops) {
    const std::uint8_t op = in.u8(), arg = in.u8();
    switch (op % 8) {
      case 0:
      case 1: {
        const Key x = key_of<Key>(arg);
        if (!refused_at_limit(s, n, 1, [&] { s.update(x); })) break;
        if (twin) twin->update(x);
        ++f[x];
        ++n;
        break;
      }
      case 2: {
        std::vector<Key> batch;
        for (std::uint8_t i = 0; i < arg % 16; ++i) batch.push_back(key_of<Key>(in.u8()));
        if (!refused_at_limit(s, n, batch.size(), [&] { s.update_many(batch.begin(), batch.end()); })) break;
        if (twin) twin->update_many(batch.begin(), batch.end());
        for (const Key& x : batch) ++f[x];
        n += batch.size();
        break;
      }
      case 3:
        check_guarantee(s, f, n, key_of<Key>(arg));
        FUZZ_CHECK(static_cast<std::uint64_t>(s.n()) == n);
        break;
      case 4:
        if constexpr (lists_items<T>::value) (void)s.items();
        break;
      case 5:
        if constexpr (serializable<T>::value) {
          const std::string b = s.serialize();
          if (twin) FUZZ_CHECK(twin->serialize() == b);  // continued identically
          twin.emplace(T::deserialize(b));
          FUZZ_CHECK(twin->serialize() == b);
        }
        break;
      case 6:
        release_of(s, arg);
        break;
      case 7:
        if constexpr (mergeable<T>::value && !is_counter_summary_v<T>) {
          if (arg & 1) {
            const T other = s;
            const std::string before = s.serialize();
            try {
              s.merge(other);
            } catch (const std::overflow_error&) {  // the mass would pass 2^62: refused, nothing changed
              FUZZ_CHECK(n > kMaxStreamLength / 2 && s.serialize() == before);
              break;
            }
            if (twin) twin->merge(T(*twin));
            for (auto& kv : f) kv.second *= 2;
            n *= 2;
          }
        }
        break;
    }
  }
  if (twin) FUZZ_CHECK(twin->n() == s.n());
}

template <class Key>
void dispatch(std::uint8_t which, Cursor& in) {
  const std::uint8_t a = in.u8(), b = in.u8(), c = in.u8();
  switch (which % 7) {
    case 0: run(SpaceSaving<Key>(1 + a % 8), in); break;
    case 1: run(MisraGries<Key>(1 + a % 8), in); break;
    case 2: run(CountMin<Key>(1 + a % 16, 1 + b % 8, c), in); break;
    case 3: run(CountSketch<Key>(1 + a % 16, 1 + b % 8, c), in); break;
    case 4:
    case 5: {
      release::SecureRng rng(c);
      const std::uint64_t depth = 1 + b % 4;  // every cell costs a noise draw (slow under ASan)
      const release::NoiseSpec spec{(c & 1) ? release::NoiseKind::laplace : release::NoiseKind::gaussian,
                                    noise::Rational{depth, 1}, (c & 2) ? 5 : 0};
      if (which % 7 == 4) run(release::PrivateSketch<Key, SketchKind::count_min>(1 + a % 8, depth, c, spec, false, rng), in);
      else run(release::PrivateSketch<Key, SketchKind::count_sketch>(1 + a % 8, depth, c, spec, (c & 4) != 0, rng), in);
      break;
    }
    default: {
      release::SecureRng rng(c);
      release::EnvelopeParams p;
      p.k = 1 + a % 3;
      p.capacity = p.k + 1 + b % 4;
      p.epsilon = 1.0;
      p.delta = 0.1;
      p.max_stream_length = 16 + c % 64;
      // The smallest legal depth and a narrow width: every cell costs a noise draw (slow under ASan).
      p.depth = release::envelope_min_depth(p.max_stream_length, p.capacity,
                                            release::SketchHeavyHitters<Key, SketchKind::count_min>::half_envelope_delta(p));
      p.width = 1 + (a >> 2) % 8;
      if (c & 1) run(release::SketchHeavyHitters<Key, SketchKind::count_min>(p, c, rng), in);
      else run(release::SketchHeavyHitters<Key, SketchKind::count_sketch>(p, c, rng), in);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Cursor in(data, size);
  const std::uint8_t which = in.u8();
  if (which & 0x80) dispatch<Str>(which, in);
  else dispatch<I64>(which, in);
  return 0;
}
