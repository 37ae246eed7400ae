// Line splitting for text input (dpsketch._input): one pass over a decompressed block that finds
// line ends (\n, \r\n, \r), strips whitespace as Python's str.strip() does, skips blank lines,
// checks UTF-8 and the line length, and writes the items as an Arrow large_string layout
// (data bytes + int64 offsets) -- no Python object per line, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "dpsketch/common/key_traits.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace py = pybind11;

namespace {

using u8 = std::uint8_t;

// Length of the valid UTF-8 sequence starting at p (< end), or 0 if invalid (overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences are invalid).
inline std::size_t utf8_seq(const u8* p, const u8* end, std::uint32_t& cp) {
  const u8 c = p[0];
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n;
  std::uint32_t min;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (static_cast<std::size_t>(end - p) < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool valid_utf8(const u8* p, const u8* end) {
  while (p < end) {
    // ASCII fast path: 32 bytes at a time, then 8
    while (end - p >= 32) {
      std::uint64_t w[4];
      std::memcpy(w, p, 32);
      if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ULL) break;
      p += 32;
    }
    while (end - p >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      if (w & 0x8080808080808080ULL) break;
      p += 8;
    }
    if (p >= end) break;
    std::uint32_t cp;
    const std::size_t n = utf8_seq(p, end, cp);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

// Python's str.isspace() for one code point (what str.strip() removes).
inline bool is_space(std::uint32_t cp) {
  if (cp < 0x80) return (cp >= 9 && cp <= 13) || (cp >= 28 && cp <= 32);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Strip whitespace from both ends of valid UTF-8 [b, e).
inline void strip(const u8*& b, const u8*& e) {
  // common case: printable ASCII at both ends
  if (b < e && *b > 32 && *b < 0x80 && e[-1] > 32 && e[-1] < 0x80) return;
  while (b < e) {
    std::uint32_t cp;
    const std::size_t n = utf8_seq(b, e, cp);
    if (n == 0 || !is_space(cp)) break;
    b += n;
  }
  while (b < e) {
    const u8* q = e - 1;
    while (q > b && (*q & 0xC0) == 0x80) --q;  // start of the last code point
    std::uint32_t cp;
    const std::size_t n = utf8_seq(q, e, cp);
    if (n == 0 || !is_space(cp)) break;
    e = q;
  }
}

// Bytes of the ill-formed sequence at p (< end) that one U+FFFD replaces: the lead byte and the
// continuation bytes that could still have completed it (Unicode's "maximal subpart", as Python's
// bytes.decode(errors="replace") does).
inline std::size_t bad_subpart(const u8* p, const u8* end) {
  const u8 c = p[0];
  if (c < 0xC2 || c > 0xF4) return 1;
  const std::size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  u8 lo = 0x80, hi = 0xBF;  // the second byte's range excludes overlong forms, surrogates, > U+10FFFF
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;
  std::size_t i = 1;
  if (p + 1 < end && p[1] >= lo && p[1] <= hi) {
    i = 2;
    while (i < n && p + i < end && (p[i] & 0xC0) == 0x80) ++i;
  }
  return i;
}

// [b, e) with every ill-formed sequence replaced by U+FFFD (EF BF BD).
void replace_invalid(const u8* b, const u8* e, std::vector<u8>& out) {
  out.clear();
  while (b < e) {
    std::uint32_t cp;
    const std::size_t n = utf8_seq(b, e, cp);
    if (n) {
      out.insert(out.end(), b, b + n);
      b += n;
    } else {
      out.insert(out.end(), {0xEF, 0xBF, 0xBD});
      b += bad_subpart(b, e);
    }
  }
}

// The integer key of a stripped line under --int-keys (dpsketch._input, "keys='int'"): an optional
// sign, one or more ASCII digits and nothing else, with its value in the signed 64-bit range
// (leading zeros allowed). False for anything else: the caller drops such a line.
// The value of 8 ASCII digits already turned into bytes 0..9, the first (most significant) digit
// in the lowest byte: pairs, then quads, then the whole, each step one multiply.
inline std::uint64_t eight_digits(std::uint64_t v) {
  v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFULL;
  v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFULL;
  return (v * 10000 + (v >> 32)) & 0xFFFFFFFFULL;
}

// The mask of the low k <= 8 bytes of a word.
inline std::uint64_t low_bytes(std::size_t k) { return k >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * k)) - 1; }

// parse_int_key's rule, for an item whose 16 bytes ending at e may be read (they lie in the same
// block): up to 16 digits are checked and valued as two words, without a branch per digit (such a
// value is below 10^16, so it cannot overflow). Longer items take the digit loop.
inline bool parse_int_key(const u8* b, const u8* e, std::int64_t& out, bool sixteen_before_e) {
  bool negative = false;
  if (b < e && (*b == '+' || *b == '-')) {
    negative = *b == '-';
    ++b;
  }
  if (b == e) return false;
  const auto n = static_cast<std::size_t>(e - b);
  if (n <= 16 && sixteen_before_e) {
    constexpr std::uint64_t kZeros = 0x3030303030303030ULL, kHigh = 0x8080808080808080ULL;
    constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL, kPlus = 0x7676767676767676ULL;
    std::uint64_t hi, lo;  // hi: the 8 bytes before the last 8 (the more significant digits)
    std::memcpy(&hi, e - 16, 8);
    std::memcpy(&lo, e - 8, 8);
    const std::size_t pad = 16 - n;  // bytes before the digits, read as '0'
    const std::uint64_t pad_hi = low_bytes(pad), pad_lo = pad > 8 ? low_bytes(pad - 8) : 0;
    hi = ((hi & ~pad_hi) | (kZeros & pad_hi)) ^ kZeros;  // digits become 0..9, any other byte > 9
    lo = ((lo & ~pad_lo) | (kZeros & pad_lo)) ^ kZeros;
    if ((((hi & kLow7) + kPlus) | hi | ((lo & kLow7) + kPlus) | lo) & kHigh) return false;
    const std::uint64_t v = eight_digits(hi) * 100000000ULL + eight_digits(lo);
    out = negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
    return true;
  }
  // magnitude limit: 2^63 for a negative value, 2^63 - 1 otherwise
  const std::uint64_t limit = negative ? (std::uint64_t{1} << 63) : (std::uint64_t{1} << 63) - 1;
  std::uint64_t v = 0;
  for (; b < e; ++b) {
    const unsigned d = static_cast<unsigned>(*b) - '0';
    if (d > 9) return false;
    if (v > (limit - d) / 10) {  // v * 10 + d > limit; keep checking that the rest are digits
      for (++b; b < e; ++b)
        if (static_cast<unsigned>(*b) - '0' > 9) return false;
      return false;
    }
    v = v * 10 + d;
  }
  out = negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  return true;
}

// A numpy array that owns the vector's memory (no copy).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* q) { delete static_cast<std::vector<T>*>(q); });
  return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

enum OnBad : int { kError = 0, kSkip = 1, kReplace = 2 };

// The first line end ('\n' or '\r') in p[from, size), or size when there is none. Both bytes are
// looked for in one pass, 16 bytes at a time, so every byte of a block is read once however its
// lines end, and a short line costs one step.
inline std::size_t line_end(const u8* p, std::size_t from, std::size_t size) {
  std::size_t i = from;
#if defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  for (; i + 16 <= size; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const int hit = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(v, cr)));
    if (hit) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(hit)));  // GCC, Clang
  }
#endif
  for (; i < size; ++i)
    if (p[i] == '\n' || p[i] == '\r') return i;
  return size;
}

// split_lines(block, final, max_line_bytes, on_bad=0, scanned=0, discarding=False, int_keys=False,
//             table_hashes=False) -> dict with
//   data, offsets: the non-blank stripped lines as an Arrow large_string layout
//   consumed: bytes of `block` used (complete lines; all of it when final)
//   scanned: bytes at the start of the unconsumed rest known to hold no line end; pass it back
//     with the rest (and more bytes after it) so that a long line is searched once, not per call
//   discarding: the rest of an overlong line is being dropped (on_bad skip/replace); pass it back
//   lines: lines consumed; blank: indices (0-based, within this call) of the skipped blank lines
//   bad: lines skipped or replaced under on_bad (a line is counted once, when it starts)
//   error: 0 ok, 1 invalid UTF-8, 2 line longer than max_line_bytes (on_bad error); error_line: its index
//   ints: with int_keys, the lines' integer keys (parse_int_key; data and offsets stay empty, and
//     a line that is not an integer key is dropped)
//   hashes: with table_hashes (str lines only), each line's KeyTraits<std::string>::table_hash, so
//     that a counter summary fed from another thread (update_many_utf8_hashed) skips the hashing:
//     the bytes are hashed here while they are still in cache
// on_bad: 0 error, 1 skip the line, 2 replace: ill-formed UTF-8 becomes U+FFFD and a line longer
// than max_line_bytes keeps its first max_line_bytes bytes (then decoded with replacement).
// Every byte is searched and checked a bounded number of times over a whole stream, whatever the
// line lengths (the caller appends blocks to the unconsumed rest and passes `scanned` back).
py::dict split_lines(const py::array_t<u8, py::array::c_style>& block, bool final, std::int64_t max_line,
                     int on_bad, std::int64_t scanned_in, bool discarding, bool int_keys, bool table_hashes) {
  if (block.ndim() != 1) throw py::value_error("expected a 1-D byte array");
  if (max_line < 1) throw py::value_error("max_line_bytes must be >= 1");
  if (on_bad < kError || on_bad > kReplace) throw py::value_error("on_bad must be 0 (error), 1 (skip) or 2 (replace)");
  const u8* p = block.data();
  const auto size = static_cast<std::size_t>(block.shape(0));
  if (scanned_in < 0 || static_cast<std::size_t>(scanned_in) > size) throw py::value_error("scanned out of range");
  std::vector<u8> data;
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int64_t> blank;
  std::vector<std::int64_t> ints;
  std::vector<std::uint64_t> hashes;
  table_hashes = table_hashes && !int_keys;
  std::size_t pos = 0, lines = 0, bad = 0, scanned = static_cast<std::size_t>(scanned_in);
  std::size_t used = 0;  // bytes of `data` written
  int error = 0;
  std::int64_t error_line = -1;
  {
    py::gil_scoped_release nogil;
    const auto limit = static_cast<std::size_t>(max_line);
    std::vector<u8> fixed;  // one replaced line
    // Output sized at the first kept line: at most one key per '\n' after the known-scanned
    // prefix (which holds none; lines ended by '\r' alone grow the vectors as usual), and at most
    // the block's bytes from that line on (a replaced line can be longer: `data` then grows).
    // Nothing is allocated or counted for a call that only extends a long line, so such a line
    // costs O(L) in all. kSlack spare bytes let a short line be copied as one 16-byte move.
    constexpr std::size_t kSlack = 16;
    bool sized = false;
    // a kept line: its integer key (int_keys; dropped when it is not one), else its bytes
    const auto emit = [&](const u8* b, const u8* f, bool in_block) {
      const auto n = static_cast<std::size_t>(f - b);
      if (!sized) {
        sized = true;
        const std::size_t keys = static_cast<std::size_t>(
            std::count(p + scanned_in, p + size, static_cast<u8>('\n'))) + 1;
        if (int_keys) {
          ints.reserve(keys);
        } else {
          offsets.reserve(keys + 1);
          if (table_hashes) hashes.reserve(keys);
          data.resize(size - std::min(pos, size) + n + kSlack);
        }
      }
      if (int_keys) {
        std::int64_t v;
        if (parse_int_key(b, f, v, in_block && f - p >= 16)) ints.push_back(v);
        return;
      }
      if (used + n + kSlack > data.size()) data.resize(std::max(2 * data.size(), used + n + kSlack));
      using Traits = dpsketch::KeyTraits<std::string>;
      const char* key = reinterpret_cast<const char*>(b);
      if (in_block && n <= kSlack && static_cast<std::size_t>(b - p) + kSlack <= size) {
        std::memcpy(data.data() + used, b, kSlack);  // a constant-size copy: one vector move
        // read from the block, not the copy: a load from a store just made may wait for it
        if (table_hashes) hashes.push_back(Traits::table_hash_padded(key, n));
      } else {
        std::memcpy(data.data() + used, b, n);
        if (table_hashes) hashes.push_back(Traits::table_hash(std::string_view(key, n)));
      }
      used += n;
      offsets.push_back(static_cast<std::int64_t>(used));
    };
    // UTF-8 is checked once over the complete lines after the first (line ends are ASCII, so a
    // sequence cannot span two lines); the first line, which may be a long carried one, and every
    // line of a block that fails are checked on their own, once each.
    int block_ok = -1;  // unknown until the first line is done
    while (pos < size) {
      const std::size_t e = line_end(p, pos + scanned, size);
      scanned = 0;
      if (discarding) {  // the tail of an overlong line: drop it, up to its end
        if (e == size && !final) { pos = size; break; }
        if (e < size && p[e] == '\r' && e + 1 == size && !final) { pos = e; break; }  // maybe "\r\n"
        pos = e == size ? size : (p[e] == '\r' && e + 1 < size && p[e + 1] == '\n') ? e + 2 : e + 1;
        discarding = false;
        continue;
      }
      if (e == size && !final) {
        if (e - pos > limit) {
          if (on_bad == kError) { error = 2; error_line = static_cast<std::int64_t>(lines); break; }
          // skip/replace: settle the line now and drop the rest of it as it comes (memory stays bounded)
          ++bad;
          if (on_bad == kReplace) {
            const u8* b = p + pos;
            const u8* f = p + pos + limit;
            replace_invalid(b, f, fixed);
            b = fixed.data();
            f = b + fixed.size();
            strip(b, f);
            if (b == f) blank.push_back(static_cast<std::int64_t>(lines));
            else emit(b, f, false);
          }
          ++lines;
          discarding = true;
          pos = size;
          break;
        }
        scanned = e - pos;
        break;  // incomplete last line: left for the next call
      }
      std::size_t next = e;
      if (e < size) {
        if (p[e] == '\r') {
          if (e + 1 < size) next = (p[e + 1] == '\n') ? e + 2 : e + 1;
          else if (final) next = e + 1;
          else { scanned = e - pos; break; }  // a '\r' at the block end may be half of "\r\n": wait for more
        } else {
          next = e + 1;
        }
      }
      const u8* b = p + pos;
      const u8* f = p + e;
      bool replaced = false;
      if (e - pos > limit) {
        if (on_bad == kError) { error = 2; error_line = static_cast<std::int64_t>(lines); break; }
        ++bad;
        ++lines;
        pos = next;
        if (on_bad == kSkip) continue;
        replace_invalid(b, b + limit, fixed);
        replaced = true;
      } else {
        if (block_ok < 0 && lines > 0) {
          // the complete lines from here on: up to the last line end of the block
          std::size_t last = size;
          while (last > pos && p[last - 1] != '\n' && p[last - 1] != '\r') --last;
          block_ok = valid_utf8(p + pos, p + last) ? 1 : 0;
        }
        if (block_ok != 1 && !valid_utf8(b, f)) {
          if (on_bad == kError) { error = 1; error_line = static_cast<std::int64_t>(lines); break; }
          ++bad;
          ++lines;
          pos = next;
          if (on_bad == kSkip) continue;
          replace_invalid(b, f, fixed);
          replaced = true;
        } else {
          ++lines;
          pos = next;
        }
      }
      if (replaced) {
        b = fixed.data();
        f = b + fixed.size();
      }
      strip(b, f);
      if (b == f) {
        blank.push_back(static_cast<std::int64_t>(lines - 1));
      } else {
        emit(b, f, !replaced);
      }
    }
  }
  data.resize(used);  // keeps the capacity: no copy
  py::dict out;
  out["data"] = to_numpy(std::move(data));
  out["offsets"] = to_numpy(std::move(offsets));
  out["consumed"] = pos;
  out["scanned"] = scanned;
  out["discarding"] = discarding;
  out["lines"] = lines;
  out["bad"] = bad;
  out["blank"] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(blank.size()), blank.data());
  out["error"] = error;
  out["error_line"] = error_line;
  out["ints"] = to_numpy(std::move(ints));
  out["hashes"] = to_numpy(std::move(hashes));
  return out;
}

// The int64 values of an Arrow (large_)string column when every item is -?[0-9]{1,18} (so within
// int64 whatever its leading zeros), else None: the common case of _input._plain_ints read in one
// pass, without a mask per byte and a cast. None decides nothing: the caller reads the column its
// exact way (longer items, a sign elsewhere, anything else).
template <class Offset>
py::object plain_ints_of(const Offset* off, std::size_t n, const char* data, std::size_t size) {
  for (std::size_t i = 0; i <= n; ++i)
    if (off[i] < 0 || static_cast<std::uint64_t>(off[i]) > size || (i > 0 && off[i] < off[i - 1]))
      throw py::value_error("string offsets must be non-decreasing and within the data buffer");
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(n));
  std::int64_t* q = out.mutable_data();
  bool ok = true;
  {
    py::gil_scoped_release nogil;
    for (std::size_t i = 0; i < n && ok; ++i) {
      const char* p = data + off[i];
      const char* e = data + off[i + 1];
      const bool neg = p < e && *p == '-';
      p += neg;
      if (e - p < 1 || e - p > 18) {
        ok = false;
        break;
      }
      std::int64_t v = 0;
      for (; p < e; ++p) {
        const unsigned d = static_cast<unsigned char>(*p) - static_cast<unsigned>('0');
        if (d > 9) {
          ok = false;
          break;
        }
        v = v * 10 + static_cast<std::int64_t>(d);
      }
      q[i] = neg ? -v : v;
    }
  }
  if (!ok) return py::none();
  return std::move(out);
}

py::object plain_ints(const py::array& offsets, const py::array_t<std::uint8_t, py::array::c_style>& data) {
  if (offsets.ndim() != 1 || data.ndim() != 1 || offsets.shape(0) < 1)
    throw py::value_error("expected 1-D offsets (n + 1) and data");
  const auto n = static_cast<std::size_t>(offsets.shape(0) - 1);
  const char* d = reinterpret_cast<const char*>(data.data());
  const auto size = static_cast<std::size_t>(data.shape(0));
  if (offsets.dtype().kind() == 'i' && offsets.itemsize() == 4) {
    const auto o = py::array_t<std::int32_t, py::array::c_style>::ensure(offsets);
    if (!o) throw py::error_already_set();
    return plain_ints_of(o.data(), n, d, size);
  }
  const auto o = py::array_t<std::int64_t, py::array::c_style>::ensure(offsets);
  if (!o) throw py::error_already_set();
  return plain_ints_of(o.data(), n, d, size);
}

}  // namespace

void bind_lines(py::module_& m) {
  m.def("plain_ints", &plain_ints, py::arg("offsets"), py::arg("data"),
        "The int64 values of an Arrow string column's (offsets, data) when every item is -?[0-9]{1,18}, "
        "else None (see _input._plain_ints).");
  m.def("split_lines", &split_lines, py::arg("block"), py::arg("final"), py::arg("max_line_bytes"),
        py::arg("on_bad") = 0, py::arg("scanned") = 0, py::arg("discarding") = false, py::arg("int_keys") = false,
        py::arg("table_hashes") = false,
        "Split a UTF-8 block into stripped, non-blank lines (Arrow large_string layout), or with int_keys "
        "into their integer keys; see _input.py.");
}
