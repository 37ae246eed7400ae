// libFuzzer target: from_bytes of the dyadic sketches (families 5 and 9). Their bytes end in a
// checksum, which random mutations almost never match; so unless the input's first byte is odd,
// the target rewrites the last 8 bytes to the checksum of the rest (header_checksum64) before parsing, letting the
// fuzzer reach the payload checks (an odd first byte keeps the input as is: the mismatch path).
// Whatever the input, deserialize either throws DeserializeError or returns an object that
// re-serializes to exactly the parsed bytes and survives queries, merges and updates (which fail
// only with ParameterError / StreamLimitError, leaving the object unchanged). A private sketch
// whose length is withheld (a published copy) refuses its own updates with LengthWithheldError.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/release/private_dyadic.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace dpsketch;
using dpsketch::dyadic::DyadicCountSketch;
using dpsketch::dyadic::PrivateDyadicCountSketch;

void exercise(DyadicCountSketch& s) {
  const std::uint64_t hi = s.max_item();
  for (std::uint64_t x : {std::uint64_t{0}, std::uint64_t{1}, hi / 3, hi / 2, hi}) (void)s.rank(x);
  const double total = s.total();
  for (double q : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    const std::uint64_t v = s.quantile(q * total);
    FUZZ_CHECK(v <= hi);
  }
  try {
    (void)s.heavy_hitters(total / 4, 64);
  } catch (const ParameterError&) {
  }
  DyadicCountSketch copy = s;
  try {
    copy.merge(s);
  } catch (const std::overflow_error&) {  // the 2^62 mass limit (StreamLimitError derives from it)
    FUZZ_CHECK(copy.serialize() == s.serialize());  // unchanged
  }
  for (std::int64_t c : {std::int64_t{1}, std::int64_t{-3}}) {
    const std::string before = s.serialize();
    try {
      s.update(hi / 5, c);
    } catch (const std::overflow_error&) {  // the 2^62 mass limit (StreamLimitError derives from it)
      FUZZ_CHECK(s.serialize() == before);
    }
  }
  {  // a batch long enough for the folded exact levels (add_chunk) equals the same updates one by one
    std::vector<std::uint64_t> xs;
    std::vector<std::int64_t> cs;
    for (std::uint64_t k = 0; k < 100; ++k) {
      xs.push_back(std::min(hi, (hi / 97) * (k % 13) + k % 3));
      cs.push_back(static_cast<std::int64_t>(k % 5) - 2);
    }
    for (const bool counted : {false, true}) {
      DyadicCountSketch one = s, many = s;
      bool one_ok = true, many_ok = true;
      try {
        for (std::size_t k = 0; k < xs.size(); ++k) one.update(xs[k], counted ? cs[k] : 1);
      } catch (const std::overflow_error&) {
        one_ok = false;
      }
      try {
        many.update_many(xs.data(), counted ? cs.data() : nullptr, xs.size());
      } catch (const std::overflow_error&) {
        many_ok = false;
        FUZZ_CHECK(many.serialize() == s.serialize());  // all-or-nothing
      }
      if (many_ok) FUZZ_CHECK(one_ok && one.serialize() == many.serialize());
    }
  }
  auto again = DyadicCountSketch::deserialize(s.serialize());
  FUZZ_CHECK(again.serialize() == s.serialize());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  if (size >= 16 && !(data[0] & 1)) {
    const std::uint64_t c = dyadic::header_checksum64(std::string_view(in).substr(0, size - 8));
    in.replace(size - 8, 8, reinterpret_cast<const char*>(&c), 8);
  }
  try {
    auto s = DyadicCountSketch::deserialize(in);
    FUZZ_CHECK(s.serialize() == in);  // canonical format
    exercise(s);
  } catch (const DeserializeError&) {
  }
  try {
    auto p = PrivateDyadicCountSketch::deserialize(in);
    FUZZ_CHECK(p.serialize() == in);
    if (p.length_withheld()) {
      FUZZ_CHECK(p.sketch().n() == 0 && p.sketch().mass() == p.sketch().max_cell());
      bool refused = false;
      try {
        p.update(0, 1);
      } catch (const release::LengthWithheldError&) {
        refused = true;
      }
      FUZZ_CHECK(refused && p.serialize() == in);
    }
    exercise(p.sketch());
  } catch (const DeserializeError&) {
  }
  return 0;
}
