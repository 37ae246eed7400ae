// The stream-summary of Metwally et al.: slots grouped by count value, groups in ascending value
// order in a doubly linked list, each group's slots in a doubly linked list ordered newest first.
// A slot enters a group only when it is incremented (or inserted), i.e. at its latest occurrence,
// so "newest in the minimum group" is exactly "the minimum-count item whose most recent occurrence
// is latest" -- the tie rule of ALGORITHMS.md §3. Misra-Gries (§2) reuses it with values relative
// to a running base. Index-linked, preallocated: no allocation after construction.
#pragma once

#include <cstdint>
#include <vector>

namespace dpsketch::detail {

class CountGroups {
 public:
  static constexpr std::int32_t kNone = -1;

  explicit CountGroups(std::uint32_t slots) : links_(slots), groups_(slots) {
    for (std::uint32_t g = 0; g < slots; ++g) groups_[g].next = g + 1 < slots ? std::int32_t(g + 1) : kNone;
    free_group_ = slots ? 0 : kNone;
  }

  std::int32_t min_group() const noexcept { return head_; }
  std::int32_t max_group() const noexcept { return tail_; }
  std::uint64_t value(std::int32_t g) const noexcept { return groups_[g].value; }
  std::int32_t first_slot(std::int32_t g) const noexcept { return groups_[g].head; }  // newest
  std::int32_t next_group(std::int32_t g) const noexcept { return groups_[g].next; }
  std::int32_t prev_group(std::int32_t g) const noexcept { return groups_[g].prev; }
  std::int32_t next_slot(std::int32_t s) const noexcept { return links_[s].next; }   // older
  std::int32_t group_of(std::int32_t s) const noexcept { return links_[s].group; }
  std::uint64_t value_of(std::int32_t s) const noexcept { return groups_[links_[s].group].value; }
  bool grouped(std::int32_t s) const noexcept { return links_[s].group != kNone; }

  // Puts an ungrouped slot into the group of value v as its newest member. Requires v <= the
  // minimum value (new counts start at the bottom: 1 for SpaceSaving, base + 1 for Misra-Gries).
  void attach_min(std::int32_t s, std::uint64_t v) noexcept {
    std::int32_t g = head_;
    if (g == kNone || groups_[g].value != v) g = new_group_after(kNone, v);
    push_front(g, s);
  }

  // value(s) += 1, keeping the slot newest in its new group.
  void increment(std::int32_t s) noexcept {
    const std::int32_t g = links_[s].group;
    const std::uint64_t v1 = groups_[g].value + 1;
    const std::int32_t ng = groups_[g].next;
    const bool alone = links_[s].prev == kNone && links_[s].next == kNone;
    if (ng != kNone && groups_[ng].value == v1) {
      unlink(g, s);
      push_front(ng, s);
      if (alone) free_group(g);
    } else if (alone) {
      groups_[g].value = v1;  // next group (if any) is > v1, order holds
    } else {
      unlink(g, s);
      push_front(new_group_after(g, v1), s);
    }
  }

  // Removes the whole minimum group and returns its slots, newest first, via `visit(slot)`; the
  // slots become ungrouped. Used by Misra-Gries when the minimum count reaches zero.
  template <class Visit>
  void release_min_group(Visit&& visit) noexcept {
    const std::int32_t g = head_;
    std::int32_t s = groups_[g].head;
    while (s != kNone) {
      const std::int32_t nx = links_[s].next;
      links_[s] = Link{};
      visit(s);
      s = nx;
    }
    groups_[g].head = kNone;
    free_group(g);
  }

  // Rebuild support (deserialization): append s as newest member of the top group when it has
  // value v, else of a new top group with value v. Values must arrive in non-decreasing order.
  void append_top(std::int32_t s, std::uint64_t v) noexcept {
    std::int32_t g = tail_;
    if (g == kNone || groups_[g].value != v) g = new_group_after(tail_, v);
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
    std::int32_t head = kNone, prev = kNone, next = kNone;
  };

  void push_front(std::int32_t g, std::int32_t s) noexcept {
    const std::int32_t h = groups_[g].head;
    links_[s] = Link{g, kNone, h};
    if (h != kNone) links_[h].prev = s;
    groups_[g].head = s;
  }

  void unlink(std::int32_t g, std::int32_t s) noexcept {
    const Link l = links_[s];
    if (l.prev != kNone) links_[l.prev].next = l.next; else groups_[g].head = l.next;
    if (l.next != kNone) links_[l.next].prev = l.prev;
  }

  // New empty group with value v right after group `after` (kNone: at the bottom).
  std::int32_t new_group_after(std::int32_t after, std::uint64_t v) noexcept {
    const std::int32_t g = free_group_;  // never exhausted: #groups <= #nonempty slots
    free_group_ = groups_[g].next;
    const std::int32_t nx = after == kNone ? head_ : groups_[after].next;
    groups_[g] = Group{v, kNone, after, nx};
    if (after == kNone) head_ = g; else groups_[after].next = g;
    if (nx == kNone) tail_ = g; else groups_[nx].prev = g;
    return g;
  }

  void free_group(std::int32_t g) noexcept {
    const Group& x = groups_[g];
    if (x.prev == kNone) head_ = x.next; else groups_[x.prev].next = x.next;
    if (x.next == kNone) tail_ = x.prev; else groups_[x.next].prev = x.prev;
    groups_[g].next = free_group_;
    free_group_ = g;
  }

  std::vector<Link> links_;
  std::vector<Group> groups_;
  std::int32_t head_ = kNone, tail_ = kNone, free_group_ = kNone;
};

}  // namespace dpsketch::detail
