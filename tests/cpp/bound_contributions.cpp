// Contribution bounding (dpsketch/privacy_unit/bound_contributions.hpp) against the rule written
// out per unit with std::map: per unit the m distinct keys with the smallest pair hash (ties by
// key value), <= c rows each. Also: removing a unit changes the counts by exactly what that unit
// keeps alone; ties of the pair hash follow key_rank, and without it are reported; codes name
// equal values; out-of-range codes are refused; a column coded batch by batch (ColumnCodes, from
// Arrow-layout offsets or int64 arrays) gets the codes of the whole column.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "dpsketch/privacy_unit/bound_contributions.hpp"
#include "dpsketch/privacy_unit/column_codes.hpp"

using namespace dpsketch::privacy_unit;

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

struct Rows {
  std::vector<std::int64_t> units, keys;
};

// Most units hold a few rows; a few hold hundreds (more than m keys, more than c rows of a key).
Rows make_rows(std::mt19937_64& g, std::size_t n) {
  Rows r;
  for (std::size_t i = 0; i < n; ++i) {
    r.units.push_back(static_cast<std::int64_t>(g() % 700));
    r.keys.push_back(static_cast<std::int64_t>((g() % 300) * (g() % 300) % 500) - 250);
  }
  for (std::int64_t u = 0; u < 4; ++u)
    for (int j = 0; j < 300; ++j) {
      r.units.push_back(1000 + u);
      r.keys.push_back(static_cast<std::int64_t>(g() % 90));
    }
  return r;
}

// The rule, unit by unit: {key value: bounded count}.
std::map<std::int64_t, std::int64_t> reference(const Rows& r, std::uint64_t salt, std::uint64_t m, std::uint64_t c) {
  std::map<std::int64_t, std::map<std::int64_t, std::uint64_t>> per_unit;
  for (std::size_t i = 0; i < r.units.size(); ++i) ++per_unit[r.units[i]][r.keys[i]];
  std::map<std::int64_t, std::int64_t> out;
  for (const auto& [unit, keys] : per_unit) {
    std::vector<std::tuple<std::uint64_t, std::int64_t, std::uint64_t>> order;
    for (const auto& [key, rows] : keys)
      order.emplace_back(pair_hash(salted_int_hash(unit, salt), salted_int_hash(key, salt ^ kKeySaltTweak)), key, rows);
    std::sort(order.begin(), order.end());
    for (std::size_t j = 0; j < order.size() && j < m; ++j)
      out[std::get<1>(order[j])] += static_cast<std::int64_t>(std::min(std::get<2>(order[j]), c));
  }
  return out;
}

std::map<std::int64_t, std::int64_t> kernel(const Rows& r, std::uint64_t salt, std::uint64_t m, std::uint64_t c) {
  const std::size_t n = r.units.size();
  IntCodes units(salt), keys(salt ^ kKeySaltTweak);
  std::vector<std::int32_t> uc(n), kc(n);
  units.encode(r.units.data(), n, uc.data());
  keys.encode(r.keys.data(), n, kc.data());
  std::vector<std::int64_t> counts(keys.values().size());
  const bool tie = bound_counts(uc.data(), kc.data(), n, units.hashes().data(), units.hashes().size(),
                                keys.hashes().data(), keys.hashes().size(), m, c, nullptr, counts.data());
  if (tie) ++failures;  // int keys cannot tie: their hash is a bijection
  std::map<std::int64_t, std::int64_t> out;
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (counts[k] > 0) out[keys.values()[k]] = counts[k];
  return out;
}

}  // namespace

int main() {
  std::mt19937_64 g(20261202);
  const Rows rows = make_rows(g, 20000);
  const std::uint64_t salt = g();
  bool same = true;
  for (auto [m, c] : {std::pair<std::uint64_t, std::uint64_t>{1, 1}, {3, 2}, {10, 1}, {50, 4}})
    same = same && kernel(rows, salt, m, c) == reference(rows, salt, m, c);
  expect(same, "bound_counts equals the rule written per unit (int codes, m and c varied)");

  // Removing unit 1000 (hundreds of rows) changes the counts by what it keeps alone.
  Rows rest, alone;
  for (std::size_t i = 0; i < rows.units.size(); ++i) {
    Rows& to = rows.units[i] == 1000 ? alone : rest;
    to.units.push_back(rows.units[i]);
    to.keys.push_back(rows.keys[i]);
  }
  auto full = kernel(rows, salt, 5, 2), without = kernel(rest, salt, 5, 2), own = kernel(alone, salt, 5, 2);
  for (const auto& [k, v] : own) without[k] += v;
  expect(full == without, "removing a unit removes exactly what it keeps alone");

  // Ties: 40 keys share 4 hashes; the codes are not in value order (rank = code reversed).
  {
    const std::size_t n = 5000, n_units = 100, n_keys = 40;
    std::vector<std::uint64_t> hu(n_units), hk(n_keys), rank(n_keys);
    for (auto& h : hu) h = g();
    const std::uint64_t four[4] = {g(), g(), g(), g()};
    for (std::size_t k = 0; k < n_keys; ++k) hk[k] = four[k % 4], rank[k] = n_keys - 1 - k;
    std::vector<std::int64_t> uc(n), kc(n);
    for (std::size_t i = 0; i < n; ++i) uc[i] = static_cast<std::int64_t>(g() % n_units), kc[i] = static_cast<std::int64_t>(g() % n_keys);
    // the rule with ties by rank, per unit
    std::vector<std::int64_t> want(n_keys, 0);
    std::map<std::int64_t, std::map<std::int64_t, std::uint64_t>> per_unit;
    for (std::size_t i = 0; i < n; ++i) ++per_unit[uc[i]][kc[i]];
    for (const auto& [u, keys] : per_unit) {
      std::vector<std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::uint64_t>> order;
      for (const auto& [k, cnt] : keys) order.emplace_back(pair_hash(hu[u], hk[k]), rank[k], k, cnt);
      std::sort(order.begin(), order.end());
      for (std::size_t j = 0; j < order.size() && j < 3; ++j) want[std::get<2>(order[j])] += 1;
    }
    std::vector<std::int64_t> got(n_keys);
    const bool tie_ranked = bound_counts(uc.data(), kc.data(), n, hu.data(), n_units, hk.data(), n_keys, 3, 1, rank.data(),
                                         got.data());
    expect(!tie_ranked && got == want, "ties of the pair hash are broken by key_rank");
    expect(bound_counts(uc.data(), kc.data(), n, hu.data(), n_units, hk.data(), n_keys, 3, 1, nullptr, got.data()),
           "without key_rank a deciding tie is reported");
  }

  // String codes: equal iff the strings are equal, block and single lookups alike.
  {
    std::vector<std::string> words;
    for (int i = 0; i < 30000; ++i) words.push_back(std::string(g() % 3, 'x') + std::to_string(g() % 5000));
    BytesCodes one(salt), block(salt);
    std::vector<std::uint32_t> a(words.size()), b(words.size());
    for (std::size_t i = 0; i < words.size(); ++i) a[i] = one.code(words[i]);
    for (std::size_t i = 0; i < words.size(); i += BytesCodes::kBlock) {
      std::string_view v[BytesCodes::kBlock];
      const std::size_t cnt = std::min(BytesCodes::kBlock, words.size() - i);
      for (std::size_t j = 0; j < cnt; ++j) v[j] = words[i + j];
      block.encode_block(v, cnt, b.data() + i, [](std::size_t) {});
    }
    bool ok = a == b;
    std::map<std::string, std::uint32_t> seen;
    for (std::size_t i = 0; i < words.size(); ++i) {
      const auto it = seen.emplace(words[i], a[i]).first;
      ok = ok && it->second == a[i] && one.value(a[i]) == words[i] &&
           one.hashes()[a[i]] == salted_bytes_hash(words[i], salt);
    }
    expect(ok && one.size() == seen.size(), "string codes name equal strings");
  }

  // BytesCodes::hash (looked-up starting states, one masked word for short values read in place)
  // gives salted_bytes_hash's bits at every length.
  {
    BytesCodes codes(salt);
    std::string buf(200, '\0');
    bool equal = true;
    for (int rep = 0; rep < 50; ++rep) {
      for (auto& ch : buf) ch = static_cast<char>(g());
      for (std::size_t len = 0; len <= 70; ++len) {
        const std::string_view v(buf.data() + rep, len);
        equal = equal && codes.hash(v, true) == salted_bytes_hash(v, salt) && codes.hash(v, false) == salted_bytes_hash(v, salt);
      }
    }
    expect(equal, "BytesCodes::hash equals salted_bytes_hash");
  }

  // Chunks and released tables: a column of more rows than a chunk, in batches that straddle the
  // chunks, its lookup tables released between batches, gets the codes of the whole column.
  {
    const std::size_t n = 2 * ColumnCodes::kChunk + 12345;
    std::vector<std::int64_t> ints(n);
    std::string data;
    std::vector<std::int64_t> off{0};
    for (std::size_t i = 0; i < n; ++i) {
      ints[i] = static_cast<std::int64_t>(g() % 50000);
      data += (i % 5 ? std::to_string(ints[i]) : "a longer value " + std::to_string(ints[i]));
      off.push_back(static_cast<std::int64_t>(data.size()));
    }
    BytesCodes whole_s(salt);
    IntCodes whole_i(salt);
    std::vector<std::uint32_t> want_s(n), want_i(n);
    for (std::size_t i = 0; i < n; ++i) want_s[i] = whole_s.code(std::string_view(data).substr(off[i], off[i + 1] - off[i]));
    whole_i.encode(ints.data(), n, want_i.data());
    ColumnCodes cs(salt), ci(salt);
    std::size_t at = 0;
    for (const std::size_t len : {std::size_t{100000}, ColumnCodes::kChunk, std::size_t{7}, std::size_t{50000}}) {
      cs.add_strings(off.data() + at, data.data(), data.size(), len);
      ci.add_ints(ints.data() + at, len);
      cs.release_table();
      ci.release_table();
      at += len;
    }
    cs.add_strings(off.data() + at, data.data(), data.size(), n - at);
    ci.add_ints(ints.data() + at, n - at);
    expect(cs.codes() == want_s && cs.hashes() == whole_s.hashes() && ci.codes() == want_i &&
               ci.hashes() == whole_i.hashes() && cs.rows() == n,
           "codes across chunks and released tables are those of the whole column");
  }

  // Batches: ColumnCodes over Arrow-layout slices (32- and 64-bit offsets, not starting at 0) and
  // int64 slices gives the codes and hashes of the whole column, and bounding over them the counts.
  {
    std::vector<std::string> words;
    for (std::size_t i = 0; i < rows.keys.size(); ++i)
      words.push_back(i % 7 ? std::to_string(rows.keys[i]) : "k\xc3\xa9y-" + std::to_string(rows.keys[i]) + "-long");
    std::string data = "padding";
    std::vector<std::int64_t> off64{static_cast<std::int64_t>(data.size())};
    for (const auto& w : words) data += w, off64.push_back(static_cast<std::int64_t>(data.size()));
    std::vector<std::int32_t> off32(off64.begin(), off64.end());
    BytesCodes whole(salt ^ kKeySaltTweak);
    std::vector<std::uint32_t> want(words.size());
    for (std::size_t i = 0; i < words.size(); ++i) want[i] = whole.code(words[i]);
    ColumnCodes keys(salt ^ kKeySaltTweak), units(salt);
    std::size_t at = 0;
    for (const std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{333}, std::size_t{0}, std::size_t{5000}}) {
      if (len % 2)
        keys.add_strings(off32.data() + at, data.data(), data.size(), len);
      else
        keys.add_strings(off64.data() + at, data.data(), data.size(), len);
      units.add_ints(rows.units.data() + at, len);
      at += len;
    }
    keys.add_strings(off64.data() + at, data.data(), data.size(), words.size() - at);
    units.add_ints(rows.units.data() + at, words.size() - at);
    expect(keys.codes() == want && keys.hashes() == whole.hashes() && keys.distinct() == whole.size(),
           "string batches get the codes and hashes of the whole column");
    IntCodes all_units(salt);
    std::vector<std::uint32_t> unit_codes(rows.units.size());
    all_units.encode(rows.units.data(), rows.units.size(), unit_codes.data());
    expect(units.codes() == unit_codes && units.hashes() == all_units.hashes(), "int batches likewise");
    std::vector<std::int64_t> got(keys.distinct()), ref(keys.distinct());
    bound_counts(units, keys, 3, 2, nullptr, got.data());
    bound_counts(unit_codes.data(), want.data(), want.size(), all_units.hashes().data(), all_units.hashes().size(),
                 whole.hashes().data(), whole.size(), 3, 2, nullptr, ref.data());
    expect(got == ref, "bounding over batches equals bounding the whole columns");
    bool refused = false;
    try {
      keys.add_ints(rows.units.data(), 1);
    } catch (const dpsketch::ParameterError&) {
      refused = true;
    }
    const std::int64_t bad[2] = {5, 3};
    bool bad_offsets = false;
    try {
      ColumnCodes fresh(salt);
      fresh.add_strings(bad, data.data(), data.size(), 1);
    } catch (const dpsketch::ParameterError&) {
      bad_offsets = true;
    }
    expect(refused && bad_offsets, "a batch of the other type and decreasing offsets are ParameterErrors");
  }

  {
    const std::int32_t uc[2] = {0, 2}, kc[2] = {0, 0};
    const std::uint64_t h[3] = {1, 2, 3};
    std::int64_t counts[3];
    bool thrown = false;
    try {
      bound_counts(uc, kc, 2, h, 2, h, 3, 1, 1, nullptr, counts);
    } catch (const dpsketch::ParameterError&) {
      thrown = true;
    }
    expect(thrown, "a code out of range is a ParameterError");
  }
  return failures ? 1 : 0;
}
