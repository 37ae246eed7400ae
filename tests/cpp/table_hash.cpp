// The string slot-table hash has two forms that must agree (common/key_traits.hpp): table_hash,
// which reads only the key's bytes, and table_hash_padded, the text reader's branch-free form for
// keys of at most 16 bytes, which reads 16 bytes and masks off what follows the key. Every length
// 0..16, each with many contents and different bytes after the key.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

#include "dpsketch/common/key_traits.hpp"

int main() {
  using Traits = dpsketch::KeyTraits<std::string>;
  std::mt19937_64 rng(20261202);
  int failures = 0;
  for (std::size_t n = 0; n <= 16; ++n) {
    for (int trial = 0; trial < 2000; ++trial) {
      char buf[32];
      for (char& c : buf) c = static_cast<char>(rng());
      const std::uint64_t want = Traits::table_hash(std::string_view(buf, n));
      for (std::size_t i = n; i < sizeof buf; ++i) buf[i] = static_cast<char>(rng());  // new bytes after the key
      if (Traits::table_hash_padded(buf, n) != want) {
        if (failures++ < 5) std::printf("FAIL length %zu trial %d\n", n, trial);
      }
    }
  }
  // Keys that differ in one byte, or only in their length (a zero byte added), hash apart.
  const std::string a("abcdefgh", 8), b("abcdefgh\0", 9), c("abcdefgi", 8);
  if (Traits::table_hash(a) == Traits::table_hash(b) || Traits::table_hash(a) == Traits::table_hash(c)) {
    std::printf("FAIL near keys collide\n");
    ++failures;
  }
  std::printf("%s table_hash_padded == table_hash for lengths 0..16\n", failures ? "FAIL" : "ok  ");
  return failures ? 1 : 0;
}
