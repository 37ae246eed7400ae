// libFuzzer target: the pair coder of contribution bounding (dpsketch/privacy_unit/pair_coder.hpp)
// on rows built from the input: keys and privacy ids as ints or strings from a small alphabet,
// added in batches of any size through add() or through add_keys()/add_ids(), then bounded with
// m and c from the input. The codes and the bounded counts equal those of the same rows added as
// one batch; a bounded count is at most c times the number of units; positive_codes lists the keys
// with a positive count in value order; a batch of the other kind is refused with ParameterError.
#include <cstdint>
#include <string>
#include <vector>

#include "dpsketch/privacy_unit/pair_coder.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace dpsketch::privacy_unit;
using dpsketch::ParameterError;

struct Column {
  bool strs = false;
  std::vector<std::int64_t> ints;
  std::string bytes;
  std::vector<std::int64_t> offsets{0};
  void push(std::uint8_t v) {
    if (strs) {
      bytes += fuzz::str_key(v);
      offsets.push_back(static_cast<std::int64_t>(bytes.size()));
    } else {
      ints.push_back(fuzz::int_key(v));
    }
  }
  std::size_t size() const { return strs ? offsets.size() - 1 : ints.size(); }
  // rows [from, to) as a batch (offsets of a slice start past 0, as a sliced Arrow array's do)
  ColumnBatch batch(std::size_t from, std::size_t to) const {
    ColumnBatch b;
    b.n = to - from;
    if (strs) {
      b.kind = ColumnCodes::Kind::bytes;
      b.offsets64 = offsets.data() + from;
      b.data = bytes.data();
      b.data_size = bytes.size();
    } else {
      b.kind = ColumnCodes::Kind::ints;
      b.ints = ints.data() + from;
    }
    return b;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Cursor in(data, size);
  const std::uint8_t mode = in.u8();
  const std::uint64_t m = 1 + in.u8() % 8, c = 1 + in.u8() % 8;
  Column keys, units;
  keys.strs = mode & 1;
  units.strs = mode & 2;
  std::vector<std::size_t> cuts{0};
  while (!in.done()) {
    const std::uint8_t k = in.u8(), u = in.u8();
    keys.push(k);
    units.push(static_cast<std::uint8_t>(u % 16));
    if (u & 0x80) cuts.push_back(keys.size());
  }
  const std::size_t n = keys.size();
  cuts.push_back(n);

  PairCoder whole(11, 22), parts(11, 22);
  whole.add(keys.batch(0, n), units.batch(0, n));
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (mode & 4) {
      parts.add_keys(keys.batch(cuts[i], cuts[i + 1]));
      parts.add_ids(units.batch(cuts[i], cuts[i + 1]));
    } else {
      parts.add(keys.batch(cuts[i], cuts[i + 1]), units.batch(cuts[i], cuts[i + 1]));
    }
  }
  FUZZ_CHECK(whole.rows() == n && parts.rows() == n);
  FUZZ_CHECK(whole.keys().codes() == parts.keys().codes());
  FUZZ_CHECK(whole.units().codes() == parts.units().codes());
  FUZZ_CHECK(whole.keys().hashes() == parts.keys().hashes());

  const std::size_t d = whole.distinct_keys();
  std::vector<std::int64_t> a(d), b(d);
  const bool tie_a = whole.bound(m, c, nullptr, a.data());
  const bool tie_b = parts.bound(m, c, nullptr, b.data());
  FUZZ_CHECK(a == b && tie_a == tie_b);
  std::int64_t total = 0;
  for (std::int64_t v : a) {
    FUZZ_CHECK(v >= 0 && static_cast<std::uint64_t>(v) <= c * whole.units().distinct());
    total += v;
  }
  FUZZ_CHECK(static_cast<std::size_t>(total) <= n);
  FUZZ_CHECK(static_cast<std::uint64_t>(total) <= m * c * whole.units().distinct());
  const std::vector<std::uint32_t> pos = whole.positive_codes(a.data(), d);
  std::size_t positive = 0;
  for (std::int64_t v : a) positive += v > 0;
  FUZZ_CHECK(pos.size() == positive);
  for (std::size_t i = 1; i < pos.size(); ++i) {
    if (keys.strs) FUZZ_CHECK(whole.keys().bytes_value(pos[i - 1]) < whole.keys().bytes_value(pos[i]));
    else FUZZ_CHECK(whole.keys().int_value(pos[i - 1]) < whole.keys().int_value(pos[i]));
  }
  if (keys.strs && !pos.empty()) {
    std::vector<std::int64_t> codes(pos.begin(), pos.end());
    std::vector<std::uint32_t> points;
    std::vector<std::size_t> ends;
    FUZZ_CHECK(whole.key_code_points(codes.data(), codes.size(), points, ends));
    FUZZ_CHECK(ends.size() == codes.size());
  }
  // a batch of the other kind is refused, and nothing changes
  Column other;
  other.strs = !keys.strs;
  other.push(1);
  bool refused = false;
  try {
    whole.add_keys(other.batch(0, 1));
  } catch (const ParameterError&) {
    refused = true;
  }
  FUZZ_CHECK(refused && whole.rows() == n);
  return 0;
}
