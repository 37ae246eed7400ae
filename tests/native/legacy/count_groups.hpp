// Reference counter core: an independent SpaceSaving / Misra-Gries with linked count groups and
// an 8-byte-entry probing table, frozen, kept only as the oracle of
// tests/native/counters_differential.cpp (library core vs this one on random operation sequences)
// and as a fixed yardstick in dpsketch_bench. Not part of the library. Its slot table
// (common/slot_table.hpp, also used by SketchHeavyHitters) and merge step are the library's own.
// The stream-summary of Metwally et al.: slots grouped by count value, groups in ascending value
// order in a doubly linked list, each group's slots in a doubly linked list ordered newest first.
// A slot enters a group only when it is incremented (or inserted), i.e. at its latest occurrence,
// so "newest in the minimum group" is exactly "the minimum-count item whose most recent occurrence
// is latest" -- the tie rule of docs/algorithms.md §3. Misra-Gries (§2) reuses it with values relative
// to a running base, its zero-count slots staying in the groups at or below the base.
// Index-linked, preallocated: no allocation after construction.
#pragma once

#include <cstdint>
#include <vector>

namespace dpsketch::legacy::detail {

class CountGroups {
 public:
  static constexpr std::int32_t kNone = -1;

  // Both lists are circular with sentinels, so link surgery has no end-of-list branches: group
  // g's slot list hangs off sentinel link n + g, and the group list off sentinel group n, whose
  // value (all ones) never equals a count. Accessors map sentinels back to kNone.
  explicit CountGroups(std::uint32_t slots)
      : n_(static_cast<std::int32_t>(slots)), links_(2 * std::size_t{slots}), groups_(std::size_t{slots} + 1) {
    for (std::uint32_t g = 0; g < slots; ++g) groups_[g].next = g + 1 < slots ? std::int32_t(g + 1) : kNone;
    free_group_ = slots ? 0 : kNone;
    groups_[n_] = Group{~std::uint64_t{0}, n_, n_};
  }

  std::int32_t min_group() const noexcept { return group_or_none(groups_[n_].next); }
  std::uint64_t value(std::int32_t g) const noexcept { return groups_[g].value; }
  std::int32_t first_slot(std::int32_t g) const noexcept { return slot_or_none(links_[n_ + g].next); }  // newest
  std::int32_t next_group(std::int32_t g) const noexcept { return group_or_none(groups_[g].next); }
  std::int32_t prev_group(std::int32_t g) const noexcept { return group_or_none(groups_[g].prev); }
  std::int32_t next_slot(std::int32_t s) const noexcept { return slot_or_none(links_[s].next); }   // older
  std::int32_t group_of(std::int32_t s) const noexcept { return links_[s].group; }
  std::uint64_t value_of(std::int32_t s) const noexcept { return groups_[links_[s].group].value; }
  // Newest slot of the minimum group. Precondition: some slot is grouped.
  std::int32_t min_first_slot() const noexcept { return links_[n_ + groups_[n_].next].next; }

  // value(s) += 1, keeping the slot newest in its new group.
  void increment(std::int32_t s) noexcept {
    // Fields are read one by one: a wide copy of a Link would straddle recent 4-byte stores
    // (push_front's prev update) and miss store forwarding.
    const std::int32_t g = links_[s].group, prev = links_[s].prev, next = links_[s].next;
    const std::uint64_t v1 = groups_[g].value + 1;
    const std::int32_t ng = groups_[g].next;
    const bool alone = prev == next;  // both are the group's sentinel
    if (groups_[ng].value == v1) {
      unlink(prev, next);
      push_front(ng, s);
      if (alone) free_group(g);
    } else if (alone) {
      groups_[g].value = v1;  // next group (if any) is > v1, order holds
    } else {
      unlink(prev, next);
      push_front(new_group_after(g, v1), s);
    }
  }

  // Puts an ungrouped slot, as newest member, into the group of value v directly above group
  // `below` (kNone: at the bottom), creating that group if the next one up has another value.
  // Requires value(below) < v <= the value of the group after `below`, if any (new counts start
  // low: 1 for SpaceSaving, base + 1 for Misra-Gries).
  void attach_above(std::int32_t below, std::int32_t s, std::uint64_t v) noexcept {
    const std::int32_t b = below == kNone ? n_ : below;
    std::int32_t g = groups_[b].next;
    if (groups_[g].value != v) g = new_group_after(b, v);  // also at the top: sentinel value differs
    push_front(g, s);
  }

  // Takes s out of its group, freeing the group when s was its only member (then returns true).
  bool detach(std::int32_t s) noexcept {
    const std::int32_t g = links_[s].group, prev = links_[s].prev, next = links_[s].next;
    unlink(prev, next);
    links_[s].group = kNone;
    if (prev != next) return false;  // both are the group's sentinel only when s was alone
    free_group(g);
    return true;
  }

  // Rebuild support (deserialization): append s as newest member of the top group when it has
  // value v, else of a new top group with value v. Values must arrive in non-decreasing order.
  void append_top(std::int32_t s, std::uint64_t v) noexcept {
    const std::int32_t top = groups_[n_].prev;
    const std::int32_t g = top != n_ && groups_[top].value == v ? top : new_group_after(top, v);
    push_front(g, s);
  }

  std::size_t memory_bytes() const noexcept {
    return links_.capacity() * sizeof(Link) + groups_.capacity() * sizeof(Group);
  }

 private:
  struct Link {
    std::int32_t group = kNone, prev = kNone, next = kNone;
  };
  struct Group {
    std::uint64_t value = 0;
    std::int32_t prev = kNone, next = kNone;
  };

  std::int32_t group_or_none(std::int32_t g) const noexcept { return g == n_ ? kNone : g; }
  std::int32_t slot_or_none(std::int32_t s) const noexcept { return s >= n_ ? kNone : s; }

  void push_front(std::int32_t g, std::int32_t s) noexcept { link_after(n_ + g, s, g); }

  // Links s right after link a (a slot or a sentinel) in a's list, as a member of `group`.
  void link_after(std::int32_t a, std::int32_t s, std::int32_t group) noexcept {
    const std::int32_t nx = links_[a].next;
    links_[s].group = group;
    links_[s].prev = a;
    links_[s].next = nx;
    links_[nx].prev = s;
    links_[a].next = s;
  }

  void unlink(std::int32_t prev, std::int32_t next) noexcept {
    links_[prev].next = next;
    links_[next].prev = prev;
  }

  // New empty group with value v right after group `after` (the sentinel n_: at the bottom).
  std::int32_t new_group_after(std::int32_t after, std::uint64_t v) noexcept {
    const std::int32_t g = free_group_;  // never exhausted: #groups <= #nonempty slots
    free_group_ = groups_[g].next;
    const std::int32_t nx = groups_[after].next;
    groups_[g] = Group{v, after, nx};
    groups_[after].next = g;
    groups_[nx].prev = g;
    links_[n_ + g].next = links_[n_ + g].prev = n_ + g;
    return g;
  }

  void free_group(std::int32_t g) noexcept {
    const std::int32_t prev = groups_[g].prev, next = groups_[g].next;
    groups_[prev].next = next;
    groups_[next].prev = prev;
    groups_[g].next = free_group_;
    free_group_ = g;
  }

  std::int32_t n_;             // slots; links_[n_ + g] is group g's list sentinel, groups_[n_] the list's
  std::vector<Link> links_;
  std::vector<Group> groups_;
  std::int32_t free_group_ = kNone;
};

}  // namespace dpsketch::detail
