// libFuzzer target: the line splitter (dpsketch/io/line_splitter.hpp). The first bytes choose
// max_line_bytes (1..64 or 1 MiB), the bad-line policy, int keys or table hashes, and where the
// input is cut in two blocks; the rest is the stream. The stream split in one call (final) and in
// two calls the way dpsketch._input drives it (the unconsumed rest carried over with `scanned`
// and `discarding`) give the same lines, keys, hashes and errors; offsets stay in their data,
// every line is valid UTF-8 and every hash is the key's table_hash.
#include <cstdint>
#include <string>
#include <vector>

#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/io/line_splitter.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace dpsketch::io;

struct Out {
  std::vector<std::string> keys;
  std::vector<std::int64_t> ints;
  std::vector<std::uint64_t> hashes;
  std::size_t lines = 0, bad = 0;
  int error = 0;
  std::int64_t error_line = -1;
};

void take(const SplitResult& r, Out& o) {
  FUZZ_CHECK(r.offsets.size() >= 1 && r.offsets[0] == 0);
  FUZZ_CHECK(static_cast<std::size_t>(r.offsets.back()) == r.data.size());
  for (std::size_t i = 0; i + 1 < r.offsets.size(); ++i) {
    FUZZ_CHECK(r.offsets[i] < r.offsets[i + 1]);  // stripped lines are never empty
    const u8* b = r.data.data() + r.offsets[i];
    const u8* e = r.data.data() + r.offsets[i + 1];
    FUZZ_CHECK(valid_utf8(b, e));
    o.keys.emplace_back(reinterpret_cast<const char*>(b), static_cast<std::size_t>(e - b));
  }
  if (!r.hashes.empty()) {
    FUZZ_CHECK(r.hashes.size() + 1 == r.offsets.size());
    const std::size_t first = o.keys.size() - r.hashes.size();
    for (std::size_t i = 0; i < r.hashes.size(); ++i)
      FUZZ_CHECK(r.hashes[i] == dpsketch::KeyTraits<std::string>::table_hash(o.keys[first + i]));
  }
  o.hashes.insert(o.hashes.end(), r.hashes.begin(), r.hashes.end());
  o.ints.insert(o.ints.end(), r.ints.begin(), r.ints.end());
  if (r.error && !o.error) {
    o.error = r.error;
    o.error_line = static_cast<std::int64_t>(o.lines) + r.error_line;
  }
  o.lines += r.lines;
  o.bad += r.bad;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Cursor in(data, size);
  const std::uint8_t a = in.u8(), b = in.u8(), cut_byte = in.u8();
  const std::string_view text = in.rest();
  const auto* p = reinterpret_cast<const u8*>(text.data());
  SplitOptions opt;
  opt.max_line = (a & 0x40) ? std::size_t{1} << 20 : std::size_t{1} + (a & 0x3F);
  opt.on_bad = b % 3;
  opt.int_keys = (b & 0x10) != 0;
  opt.table_hashes = (b & 0x20) != 0;
  const std::size_t cut = text.empty() ? 0 : cut_byte % (text.size() + 1);

  Out whole;
  SplitOptions one = opt;
  one.final = true;
  const SplitResult r = split_lines(p, text.size(), one);
  FUZZ_CHECK(r.error != 0 || r.consumed == text.size());
  take(r, whole);

  // two calls: the first block ends at cut, the second is the unconsumed rest and the remainder
  Out parts;
  SplitOptions first = opt;
  first.final = false;
  const SplitResult r1 = split_lines(p, cut, first);
  FUZZ_CHECK(r1.consumed <= cut && r1.scanned <= cut - r1.consumed);
  take(r1, parts);
  if (!r1.error) {
    std::vector<u8> buf(p + r1.consumed, p + text.size());
    SplitOptions second = opt;
    second.final = true;
    second.scanned = r1.scanned;
    second.discarding = r1.discarding;
    take(split_lines(buf.data(), buf.size(), second), parts);
  }
  FUZZ_CHECK(whole.error == parts.error && whole.error_line == parts.error_line);
  if (!whole.error) {
    FUZZ_CHECK(whole.keys == parts.keys);
    FUZZ_CHECK(whole.ints == parts.ints);
    FUZZ_CHECK(whole.hashes == parts.hashes);
    FUZZ_CHECK(whole.lines == parts.lines && whole.bad == parts.bad);
  }
  return 0;
}
