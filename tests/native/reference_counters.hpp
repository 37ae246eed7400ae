// Brute-force reference counters for tests/native/counters_differential.cpp: SpaceSaving and
// Misra-Gries written literally from docs/algorithms.md §2-§3, their merges from
// docs/distributed.md §Merging counter summaries, and their bytes from docs/format.md. Every slot
// is a plain record with its logical times; every rule is a linear scan over the slots, O(capacity)
// per update. Obviously correct, not fast. Shares no code with cpp/include/dpsketch (its byte
// writer and reader are its own), so a wrong rule in the library shows up as a difference.
//
// Times: a counter `clock` advances by one on every update. Bytes carry orders, not times, so
// reading bytes (and merging) assigns fresh increasing times that reproduce the serialized order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace reference {

// ---- bytes (docs/format.md): little-endian, an 8-byte header, an optional release-state trailer --
constexpr std::uint8_t kFamilyMisraGries = 1, kFamilySpaceSaving = 2;
constexpr std::uint8_t kFlagMerged = 0x01, kFlagTrailer = 0x02;

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { for (int i = 0; i < 4; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i))); }
  void u64(std::uint64_t v) { for (int i = 0; i < 8; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i))); }
  void key(std::int64_t k) { u64(static_cast<std::uint64_t>(k)); }  // 8-byte signed
  void key(const std::string& k) {  // u32 length, then the bytes
    u32(static_cast<std::uint32_t>(k.size()));
    out_ += k;
  }
  void header(std::uint8_t family, std::uint8_t key_tag, std::uint8_t flags) {
    out_ += "DPSK";
    u8(1);  // format version
    u8(family);
    u8(key_tag);
    u8(flags);
  }
  void trailer(std::uint64_t release_count) {  // written only when the object was released
    u64(release_count);
    u8(1);  // extension version
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  std::uint8_t u8() {
    if (at_ >= b_.size()) throw std::runtime_error("reference reader: truncated bytes");
    return static_cast<std::uint8_t>(b_[at_++]);
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{u8()} << (8 * i);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{u8()} << (8 * i);
    return v;
  }
  void key(std::int64_t& k) { k = static_cast<std::int64_t>(u64()); }
  void key(std::string& k) {
    const std::uint32_t len = u32();
    k.clear();
    for (std::uint32_t i = 0; i < len; ++i) k.push_back(static_cast<char>(u8()));
  }
  // Reads the header; returns the flags. Key tag 0 (an untyped empty summary) is the int64 layout.
  std::uint8_t header(std::uint8_t family, std::uint8_t key_tag, bool& untyped) {
    if (b_.compare(0, 4, "DPSK") != 0) throw std::runtime_error("reference reader: bad magic");
    at_ = 4;
    if (u8() != 1 || u8() != family) throw std::runtime_error("reference reader: bad version or family");
    const std::uint8_t tag = u8();
    untyped = tag == 0 && key_tag == 1;
    if (tag != key_tag && !untyped) throw std::runtime_error("reference reader: bad key tag");
    return u8();
  }
  // Reads the trailer if the flags announce one; the bytes must end there. Returns the release count.
  std::uint64_t finish(std::uint8_t flags) {
    std::uint64_t count = 0;
    if (flags & kFlagTrailer) {
      count = u64();
      if (u8() != 1) throw std::runtime_error("reference reader: bad trailer version");
    }
    if (at_ != b_.size()) throw std::runtime_error("reference reader: bytes left over");
    return count;
  }

 private:
  const std::string& b_;
  std::size_t at_ = 0;
};

template <class Key>
constexpr std::uint8_t key_tag() {
  return std::is_same_v<Key, std::string> ? 2 : 1;
}

// The (capacity+1)-th largest of the summed counts, or 0 if there are at most capacity keys: what
// a merge subtracts.
template <class Key>
std::uint64_t merge_cut(const std::vector<std::pair<Key, std::uint64_t>>& sums, std::uint32_t capacity) {
  std::vector<std::uint64_t> v;
  for (const auto& kv : sums) v.push_back(kv.second);
  if (v.size() <= capacity) return 0;
  std::sort(v.begin(), v.end(), [](std::uint64_t a, std::uint64_t b) { return a > b; });
  return v[capacity];
}

// ---- SpaceSaving (docs/algorithms.md §3) ---------------------------------------------------------
template <class Key>
class SpaceSaving {
 public:
  struct Slot {
    Key key;
    std::uint64_t count;
    std::uint64_t last;  // time of the most recent increment
  };

  explicit SpaceSaving(std::uint32_t capacity) : capacity_(capacity) {}

  // Tracked -> +1; a free slot -> insert with count floor + 1 (floor 0 unless merged); else evict,
  // among the minimum-count items, the one whose most recent occurrence is latest, and give x its
  // slot with c_min + 1. Every branch makes the touched slot the newest.
  void update(const Key& x) {
    ++n_;
    ++clock_;
    for (Slot& s : slots_)
      if (s.key == x) {
        ++s.count;
        s.last = clock_;
        return;
      }
    if (slots_.size() < capacity_) {
      slots_.push_back({x, floor_ + 1, clock_});
      return;
    }
    Slot* victim = &slots_[0];  // smallest count, then latest last
    for (Slot& s : slots_)
      if (s.count < victim->count || (s.count == victim->count && s.last > victim->last)) victim = &s;
    *victim = {x, victim->count + 1, clock_};
  }
  template <class It>
  void update_many(It first, It last) {
    for (; first != last; ++first) update(*first);
  }

  std::uint64_t min_count() const {
    if (slots_.size() < capacity_) return floor_;
    std::uint64_t m = slots_[0].count;
    for (const Slot& s : slots_) m = std::min(m, s.count);
    return m;
  }
  std::uint64_t estimate(const Key& x) const {
    for (const Slot& s : slots_)
      if (s.key == x) return s.count;
    return 0;
  }
  bool contains(const Key& x) const {
    for (const Slot& s : slots_)
      if (s.key == x) return true;
    return false;
  }
  std::uint64_t n() const { return n_; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint64_t floor() const { return floor_; }
  bool merged() const { return merged_; }
  void set_release_count(std::uint64_t c) { release_count_ = c; }
  void set_untyped(bool u) { untyped_ = u; }

  // Counts ascending; within a count newest first (the first item is the next victim).
  std::vector<std::pair<Key, std::uint64_t>> items() const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    for (const Slot& s : by_count(false)) out.emplace_back(s.key, s.count);
    return out;
  }

  // Through the MG form g(x) = c(x) - min_count() (0 if untracked): add key-wise, subtract the
  // (capacity+1)-th largest sum s (0 if at most capacity keys), keep the positive results r with
  // count r + E, E = m1 + m2 + s, as the new floor. The merged order is canonical: count
  // ascending, then key ascending = oldest first.
  void merge(const SpaceSaving& other) {
    const std::uint64_t m1 = min_count(), m2 = other.min_count();
    std::vector<std::pair<Key, std::uint64_t>> sums;  // (key, g1 + g2)
    auto add = [&sums](const Key& k, std::uint64_t g) {
      for (auto& kv : sums)
        if (kv.first == k) {
          kv.second += g;
          return;
        }
      sums.emplace_back(k, g);
    };
    for (const Slot& s : slots_) add(s.key, s.count - m1);
    for (const Slot& s : other.slots_) add(s.key, s.count - m2);
    const std::uint64_t cut = merge_cut(sums, capacity_);
    const std::uint64_t e = m1 + m2 + cut;
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (const auto& kv : sums)
      if (kv.second > cut) kept.emplace_back(kv.second - cut + e, kv.first);
    std::sort(kept.begin(), kept.end());
    SpaceSaving out(capacity_);
    for (const auto& ck : kept) out.slots_.push_back({ck.second, ck.first, ++out.clock_});
    out.n_ = n_ + other.n_;
    out.floor_ = e;
    out.merged_ = true;
    *this = std::move(out);
  }

  // capacity u32, n u64, [floor u64 if merged], size u32, records (key, count u64) count ascending
  // and oldest first within a count, zero padding when more than 2^16 slots are free, trailer.
  std::string serialize() const {
    Writer w;
    const std::uint8_t tag = untyped_ && n_ == 0 ? 0 : key_tag<Key>();
    w.header(kFamilySpaceSaving, tag, (merged_ ? kFlagMerged : 0) | (release_count_ ? kFlagTrailer : 0));
    w.u32(capacity_);
    w.u64(n_);
    if (merged_) w.u64(floor_);
    w.u32(size());
    for (const Slot& s : by_count(true)) {
      w.key(s.key);
      w.u64(s.count);
    }
    const std::uint32_t free_slots = capacity_ - size();
    if (free_slots > 65536)
      for (std::uint32_t i = 0; i < free_slots; ++i) w.u8(0);
    if (release_count_) w.trailer(release_count_);
    return w.take();
  }

  // The records are replayed as successive newest arrivals, which restores the order.
  static SpaceSaving deserialize(const std::string& bytes) {
    Reader r(bytes);
    bool untyped = false;
    const std::uint8_t flags = r.header(kFamilySpaceSaving, key_tag<Key>(), untyped);
    SpaceSaving out(r.u32());
    out.n_ = r.u64();
    out.merged_ = (flags & kFlagMerged) != 0;
    if (out.merged_) out.floor_ = r.u64();
    const std::uint32_t size = r.u32();
    for (std::uint32_t i = 0; i < size; ++i) {
      Slot s{};
      r.key(s.key);
      s.count = r.u64();
      s.last = ++out.clock_;
      out.slots_.push_back(std::move(s));
    }
    if (out.capacity_ - size > 65536)
      for (std::uint32_t i = 0; i < out.capacity_ - size; ++i)
        if (r.u8() != 0) throw std::runtime_error("reference reader: nonzero padding");
    out.release_count_ = r.finish(flags);
    out.untyped_ = untyped;
    return out;
  }

 private:
  // Slots by count ascending, then by time: oldest first or newest first.
  std::vector<Slot> by_count(bool oldest_first) const {
    std::vector<Slot> v = slots_;
    std::sort(v.begin(), v.end(), [oldest_first](const Slot& a, const Slot& b) {
      if (a.count != b.count) return a.count < b.count;
      return oldest_first ? a.last < b.last : a.last > b.last;
    });
    return v;
  }

  std::uint32_t capacity_;
  std::uint64_t n_ = 0, clock_ = 0, floor_ = 0, release_count_ = 0;
  bool merged_ = false, untyped_ = false;
  std::vector<Slot> slots_;  // the tracked items, in no particular order
};

// ---- Misra-Gries, Lebeda-Tetek variant (docs/algorithms.md §2) -----------------------------------
template <class Key>
class MisraGries {
 public:
  struct Slot {
    bool has_key = false;  // false: never used
    Key key{};
    std::uint64_t count = 0;
    std::uint64_t zero_time = 0;  // when the count last reached 0 (0: never)
    std::uint64_t last = 0;       // time of the most recent increment (0: never)
  };

  explicit MisraGries(std::uint32_t capacity) : slots_(capacity) {}

  // Stored (even with count 0) -> +1; else a count-0 slot -> x takes it with count 1, choosing the
  // slot that reached 0 most recently, ties: incremented most recently, then lowest index (which
  // orders the never-used slots, all at times 0); else every counter decreases by 1 and x is dropped.
  void update(const Key& x) {
    ++n_;
    ++clock_;
    for (Slot& s : slots_)
      if (s.has_key && s.key == x) {
        ++s.count;
        s.last = clock_;
        return;
      }
    Slot* reuse = nullptr;
    for (Slot& s : slots_)  // index ascending: only a strictly later slot replaces the choice
      if (s.count == 0 && (reuse == nullptr || std::make_pair(s.zero_time, s.last) > std::make_pair(reuse->zero_time, reuse->last)))
        reuse = &s;
    if (reuse != nullptr) {
      reuse->has_key = true;
      reuse->key = x;
      reuse->count = 1;
      reuse->last = clock_;
      return;
    }
    ++decrements_;
    for (Slot& s : slots_)
      if (--s.count == 0) s.zero_time = clock_;
  }
  template <class It>
  void update_many(It first, It last) {
    for (; first != last; ++first) update(*first);
  }

  std::uint64_t estimate(const Key& x) const {
    for (const Slot& s : slots_)
      if (s.has_key && s.key == x) return s.count;
    return 0;
  }
  bool contains(const Key& x) const {
    for (const Slot& s : slots_)
      if (s.has_key && s.key == x) return true;
    return false;
  }
  std::uint64_t n() const { return n_; }
  std::uint64_t decrements() const { return decrements_; }
  bool merged() const { return merged_; }
  void set_release_count(std::uint64_t c) { release_count_ = c; }
  void set_untyped(bool u) { untyped_ = u; }

  // Positive counts ascending, newest first within a count; then (include_zero) the stored keys
  // with count 0, next to be reused first.
  std::vector<std::pair<Key, std::uint64_t>> items(bool include_zero) const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    for (const Slot& s : positive(false)) out.emplace_back(s.key, s.count);
    if (include_zero)
      for (const Slot& s : zeros())
        if (s.has_key) out.emplace_back(s.key, 0);
    return out;
  }

  // Add the positive counts key-wise, subtract the (capacity+1)-th largest sum s (0 if at most
  // capacity keys), keep the positive results; the undercount bound becomes E1 + E2 + s. The
  // merged order is canonical: count ascending, then key ascending = oldest first; every other
  // slot is never used.
  void merge(const MisraGries& other) {
    std::vector<std::pair<Key, std::uint64_t>> sums;
    auto add = [&sums](const Key& k, std::uint64_t c) {
      for (auto& kv : sums)
        if (kv.first == k) {
          kv.second += c;
          return;
        }
      sums.emplace_back(k, c);
    };
    for (const Slot& s : slots_)
      if (s.count > 0) add(s.key, s.count);
    for (const Slot& s : other.slots_)
      if (s.count > 0) add(s.key, s.count);
    const auto capacity = static_cast<std::uint32_t>(slots_.size());
    const std::uint64_t cut = merge_cut(sums, capacity);
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (const auto& kv : sums)
      if (kv.second > cut) kept.emplace_back(kv.second - cut, kv.first);
    std::sort(kept.begin(), kept.end());
    MisraGries out(capacity);
    for (std::size_t i = 0; i < kept.size(); ++i) {
      Slot& s = out.slots_[i];
      s.has_key = true;
      s.key = kept[i].second;
      s.count = kept[i].first;
      s.last = ++out.clock_;
    }
    out.n_ = n_ + other.n_;
    out.decrements_ = decrements_ + other.decrements_ + cut;
    out.merged_ = true;
    *this = std::move(out);
  }

  // capacity u32, n u64, decrements u64; u32 number of positive records, then (key, count u64)
  // count ascending, oldest first within a count; u32 number of count-0 slots (capacity - positive),
  // then from the last to be reused to the next to be reused: u8 has_key [, key]; trailer.
  std::string serialize() const {
    Writer w;
    bool holds_key = false;
    for (const Slot& s : slots_) holds_key = holds_key || s.has_key;
    const std::uint8_t tag = untyped_ && n_ == 0 && !holds_key ? 0 : key_tag<Key>();
    w.header(kFamilyMisraGries, tag, (merged_ ? kFlagMerged : 0) | (release_count_ ? kFlagTrailer : 0));
    w.u32(static_cast<std::uint32_t>(slots_.size()));
    w.u64(n_);
    w.u64(decrements_);
    const auto pos = positive(true);
    w.u32(static_cast<std::uint32_t>(pos.size()));
    for (const Slot& s : pos) {
      w.key(s.key);
      w.u64(s.count);
    }
    auto zs = zeros();
    w.u32(static_cast<std::uint32_t>(zs.size()));
    for (auto it = zs.rbegin(); it != zs.rend(); ++it) {
      w.u8(it->has_key ? 1 : 0);
      if (it->has_key) w.key(it->key);
    }
    if (release_count_) w.trailer(release_count_);
    return w.take();
  }

  // Positive slots get times in record order; the count-0 slots get zero times in list order (the
  // last listed reached 0 most recently, so it is reused first). Every time read is below the
  // clock, so later updates and decrements are newer.
  static MisraGries deserialize(const std::string& bytes) {
    Reader r(bytes);
    bool untyped = false;
    const std::uint8_t flags = r.header(kFamilyMisraGries, key_tag<Key>(), untyped);
    MisraGries out(r.u32());
    out.n_ = r.u64();
    out.decrements_ = r.u64();
    out.merged_ = (flags & kFlagMerged) != 0;
    std::size_t i = 0;
    const std::uint32_t positives = r.u32();
    for (std::uint32_t j = 0; j < positives; ++j, ++i) {
      Slot& s = out.slots_.at(i);
      s.has_key = true;
      r.key(s.key);
      s.count = r.u64();
      s.last = ++out.clock_;
    }
    const std::uint32_t zero_slots = r.u32();
    for (std::uint32_t j = 0; j < zero_slots; ++j, ++i) {
      Slot& s = out.slots_.at(i);
      s.has_key = r.u8() != 0;
      if (s.has_key) r.key(s.key);
      s.zero_time = ++out.clock_;
    }
    if (i != out.slots_.size()) throw std::runtime_error("reference reader: slots missing");
    out.release_count_ = r.finish(flags);
    out.untyped_ = untyped;
    return out;
  }

 private:
  std::vector<Slot> positive(bool oldest_first) const {
    std::vector<Slot> v;
    for (const Slot& s : slots_)
      if (s.count > 0) v.push_back(s);
    std::sort(v.begin(), v.end(), [oldest_first](const Slot& a, const Slot& b) {
      if (a.count != b.count) return a.count < b.count;
      return oldest_first ? a.last < b.last : a.last > b.last;
    });
    return v;
  }
  // Count-0 slots in reuse order: the choice update() makes first, then the next, ...
  std::vector<Slot> zeros() const {
    std::vector<Slot> v;
    for (const Slot& s : slots_)
      if (s.count == 0) v.push_back(s);
    std::stable_sort(v.begin(), v.end(), [](const Slot& a, const Slot& b) {
      return std::make_pair(a.zero_time, a.last) > std::make_pair(b.zero_time, b.last);
    });
    return v;
  }

  std::vector<Slot> slots_;
  std::uint64_t n_ = 0, clock_ = 0, decrements_ = 0, release_count_ = 0;
  bool merged_ = false, untyped_ = false;
};

}  // namespace reference
