// What SpaceSaving and MisraGries share around their own update step (absorb): the update entry
// points with the stream-length limit, the merge precondition, and the leading fields of their
// serialized form (docs/format.md). A CRTP base without data members, so the summaries keep their
// layout and absorb() stays inlined into each entry point.
//
// The derived class provides n(), capacity() and absorb(h, x) -- the update of x given
// h == table_hash(x), which throws StreamLimitError (nothing changed) when n would exceed
// kMaxStreamLength (limits.hpp).
#pragma once

#include <cstdint>
#include <iterator>
#include <string>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/limits.hpp"
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/counters/flat_slots.hpp"

namespace dpsketch::detail {

template <class Derived, class Key>
class CounterSummary : public WireState<false> {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;

 public:
  using key_type = Key;

  // Throws StreamLimitError (nothing changed) when n would exceed kMaxStreamLength (limits.hpp).
  void update(const View& x) { self().absorb(Traits::table_hash(x), x); }

  // Same result as update() on each item in order, but all-or-nothing at the stream limit: the
  // room for the whole batch is checked first. Hashes a block of items ahead of the updates, so the
  // hit/miss branch of each update resolves without waiting for the hash.
  template <class It>
  void update_many(It first, It last) {
    check_room(static_cast<std::uint64_t>(std::distance(first, last)));
    for_each_hashed<Traits>(first, last, [this](std::uint64_t h, const auto& x) { self().absorb(h, x); });
  }

  // Throws StreamLimitError unless `more` updates still fit (for batches fed item by item).
  void check_room(std::uint64_t more) const { check_stream_room(self().n(), more); }

  // update(x) given h == Traits::table_hash(x).
  void update_hashed(std::uint64_t h, const View& x) { self().absorb(h, x); }

 protected:
  // Merging needs equal capacities, and the merged n within kMaxStreamLength; throws (nothing
  // changed) otherwise. `name`: the family, for the message.
  void check_mergeable(const char* name, const Derived& other) const {
    if (other.capacity() != self().capacity())
      throw ParameterError(std::string("cannot merge ") + name + " summaries of different capacity (" +
                           std::to_string(self().capacity()) + " vs " + std::to_string(other.capacity()) +
                           "); build every part with the same capacity");
    check_stream_room(self().n(), other.n());
  }

  // The fields both families' bytes open with: the header (flag bit 0: merged), capacity u32.
  struct Opening {
    HeaderInfo header;
    bool merged;
    std::uint32_t capacity;
  };
  static Opening read_opening(ByteReader& r, Family family) {
    Opening o;
    o.header = r.read_header(family, Traits::tag, kFlagMerged, /*can_publish=*/false, /*untyped_ok=*/true);
    o.merged = (o.header.native_flags & kFlagMerged) != 0;
    o.capacity = r.u32();
    if (o.capacity < 1 || o.capacity > kMaxCapacity) throw DeserializeError("capacity out of range");
    return o;
  }
  // The stream length n u64 that follows (after the family's own checks on the capacity).
  static std::uint64_t read_length(ByteReader& r, const HeaderInfo& header) {
    const std::uint64_t n = r.u64();
    if (n > kMaxStreamLength) throw DeserializeError("stream length above the limit of 2^62");
    if (header.untyped && n != 0) throw DeserializeError("an untyped summary (key tag 0) must be empty");
    return n;
  }
  // Writes the header and capacity, n; `empty`: nothing was ever stored (an untyped summary is
  // written with key tag 0 only then).
  void write_opening(ByteWriter& w, Family family, bool empty, bool merged) const {
    w.header(family, wire_key_tag(Traits::tag, empty), wire_flags(merged ? kFlagMerged : 0));
    w.u32(self().capacity());
    w.u64(self().n());
  }

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

}  // namespace dpsketch::detail
