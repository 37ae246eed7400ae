// Named fields of log lines (docs/logs.md): Apache/nginx `common` and `combined` access logs, JSON
// lines, and a regular expression with named groups. A block of complete lines goes in; the
// requested fields come out as columns in Arrow's layouts (large_string: data + int64 offsets; or
// int64 values; each with an Arrow validity bitmap), and the lines that do not parse are listed
// with a reason, so that the caller applies its bad-line policy. Nothing here throws on data: only
// the parser's construction (an unknown field, a bad pattern) throws ParameterError.
//
// Cost: one pass per line for the named formats (memchr for the delimiters, no allocation per
// line once the output vectors have grown); the regular expression path runs libstdc++'s
// std::regex in its polynomial (Thompson NFA) mode, which is an order of magnitude slower than the
// named formats but cannot exhaust the stack on long lines (docs/logs.md gives measured speeds).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpsketch/common/compiler.hpp"
#include "dpsketch/common/errors.hpp"
#include "dpsketch/io/line_splitter.hpp"

namespace dpsketch::io {

enum class LogFormat : std::uint8_t { common, combined, json, regex };

// The fields of the common and combined formats (`%h %l %u %t "%r" %>s %b` and, for combined,
// `"%{Referer}i" "%{User-agent}i"`), in the order of kLogFieldNames.
enum class LogField : std::uint8_t {
  host, ident, user, time, timestamp, request, method, path, protocol, status, bytes, referer, user_agent
};
inline constexpr std::string_view kLogFieldNames[] = {"host",    "ident",  "user",     "time",   "timestamp",
                                                      "request", "method", "path",     "protocol", "status",
                                                      "bytes",   "referer", "user_agent"};
inline constexpr std::size_t kLogFieldCount = sizeof(kLogFieldNames) / sizeof(kLogFieldNames[0]);
// Fields held as int64 (the others are strings).
inline constexpr bool log_field_is_int(LogField f) {
  return f == LogField::timestamp || f == LogField::status || f == LogField::bytes;
}
// Whether a field exists in a format (referer and user_agent are combined only).
inline constexpr bool log_field_in(LogField f, LogFormat fmt) {
  return fmt == LogFormat::combined || (f != LogField::referer && f != LogField::user_agent);
}

// Why a line was not parsed (LogBatch::bad_reason); kBadLineReasons names them.
enum class BadLine : std::uint8_t { none = 0, utf8 = 1, too_long = 2, no_match = 3 };
inline constexpr std::string_view kBadLineReasons[] = {"", "invalid UTF-8", "longer than max_line_bytes",
                                                       "does not match the log format"};

// One requested field over the rows of a block (Arrow layouts, validity bit i = row i, LSB first).
struct LogColumn {
  std::string name;
  bool is_int = false;
  std::vector<u8> data;                 // strings: the values' bytes
  std::vector<std::int64_t> offsets{0};  // strings: rows + 1 offsets into data
  std::vector<std::int64_t> values;     // ints: one per row (0 under a null)
  std::vector<u8> validity;             // one bit per row; (rows + 7) / 8 bytes
  std::size_t null_count = 0;

  void push_bit(std::size_t row, bool valid) {
    if ((row & 7) == 0) validity.push_back(0);
    if (valid) validity.back() = static_cast<u8>(validity.back() | (1u << (row & 7)));
    else ++null_count;
  }
  void push_null(std::size_t row) {
    push_bit(row, false);
    if (is_int) values.push_back(0);
    else offsets.push_back(offsets.back());
  }
  void push_str(std::size_t row, const u8* b, std::size_t n) {
    push_bit(row, true);
    data.insert(data.end(), b, b + n);
    offsets.push_back(static_cast<std::int64_t>(data.size()));
  }
  void push_int(std::size_t row, std::int64_t v) {
    push_bit(row, true);
    values.push_back(v);
  }
};

// The result of LogParser::parse over one block.
struct LogBatch {
  std::vector<LogColumn> columns;    // in the order the fields were requested
  std::size_t lines = 0;             // lines in the block (blank and bad ones included)
  std::size_t rows = 0;              // lines parsed: the columns' length
  std::vector<std::int64_t> blank;   // indices (0-based, in the block) of blank lines, skipped
  std::vector<std::int64_t> bad;     // indices of the lines that did not parse, in order
  std::vector<u8> bad_reason;        // a BadLine per entry of bad
};

namespace log_detail {

DPSKETCH_ALWAYS_INLINE bool is_digit(u8 c) { return static_cast<unsigned>(c - '0') < 10; }
DPSKETCH_ALWAYS_INLINE bool is_blank(u8 c) { return c == ' ' || c == '\t'; }
inline int hex_value(u8 c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
inline const u8* find(const u8* b, const u8* e, u8 c) {
  if (b >= e) return e;
  const void* q = std::memchr(b, c, static_cast<std::size_t>(e - b));
  return q ? static_cast<const u8*>(q) : e;
}

// The first byte equal to a or b in [p, e), or e; 16 bytes at a time. Bytes up to readable (>= e,
// the end of the block the line lies in) may be read, so a field near the line's end takes the
// vector step too; hits at or past e are ignored.
DPSKETCH_ALWAYS_INLINE const u8* find_either(const u8* p, const u8* e, u8 a, u8 b, const u8* readable) {
#if defined(__SSE2__)
  const __m128i va = _mm_set1_epi8(static_cast<char>(a));
  const __m128i vb = _mm_set1_epi8(static_cast<char>(b));
  for (; p < e && readable - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int hit = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
    if (hit) {
      const u8* q = p + __builtin_ctz(static_cast<unsigned>(hit));
      return q < e ? q : e;
    }
  }
#else
  (void)readable;
#endif
  for (; p < e; ++p)
    if (*p == a || *p == b) return p;
  return e;
}

// A field of a line: bytes [b, e) as written; `escaped` when they hold a backslash to decode.
struct Slice {
  const u8* b = nullptr;
  const u8* e = nullptr;
  bool escaped = false;
  bool present = false;  // false: the field is null
  bool is_int = false;   // ints: v holds the value
  std::int64_t v = 0;
};

// Non-negative decimal digits [b, e) (at most 18 of them, so no overflow) into v.
DPSKETCH_ALWAYS_INLINE bool parse_digits(const u8* b, const u8* e, std::int64_t& v) {
  if (b == e || e - b > 18) return false;
  v = 0;
  for (; b < e; ++b) {
    if (!is_digit(*b)) return false;
    v = v * 10 + (*b - '0');
  }
  return true;
}

// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
inline std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// `%t` without its brackets, "10/Oct/2000:13:55:36 -0700", as seconds since the epoch (UTC);
// false unless it has exactly that shape and its parts are in range.
inline bool parse_clf_time(const u8* b, const u8* e, std::int64_t& out) {
  if (e - b != 26) return false;
  const auto num = [&](int at, int n, unsigned& v) {
    v = 0;
    for (int i = 0; i < n; ++i) {
      if (!is_digit(b[at + i])) return false;
      v = v * 10 + static_cast<unsigned>(b[at + i] - '0');
    }
    return true;
  };
  static constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  unsigned day, year, hour, minute, second, zh, zm, month = 0;
  if (!num(0, 2, day) || b[2] != '/' || b[6] != '/' || !num(7, 4, year) || b[11] != ':' || !num(12, 2, hour) ||
      b[14] != ':' || !num(15, 2, minute) || b[17] != ':' || !num(18, 2, second) || b[20] != ' ' ||
      (b[21] != '+' && b[21] != '-') || !num(22, 2, zh) || !num(24, 2, zm))
    return false;
  for (unsigned m = 0; m < 12; ++m)
    if (std::memcmp(b + 3, kMonths + 3 * m, 3) == 0) month = m + 1;
  if (month == 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || zh > 23 || zm > 59) return false;
  const std::int64_t zone = (b[21] == '-' ? -1 : 1) * static_cast<std::int64_t>(zh * 3600 + zm * 60);
  out = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - zone;
  return true;
}

// Appends an access log field's bytes with its backslash escapes decoded (Apache's \" \\ \xHH
// \n \r \t \b \v \f; nginx's \xHH); any other backslash stays as written.
inline void decode_log_escapes(const u8* b, const u8* e, std::vector<u8>& out) {
  while (b < e) {
    const u8* q = find(b, e, '\\');
    out.insert(out.end(), b, q);
    if (q == e) break;
    if (q + 1 == e) {
      out.push_back('\\');
      break;
    }
    const u8 c = q[1];
    b = q + 2;
    switch (c) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'b': out.push_back('\b'); break;
      case 'v': out.push_back('\v'); break;
      case 'f': out.push_back('\f'); break;
      case 'x':
        if (e - b >= 2 && hex_value(b[0]) >= 0 && hex_value(b[1]) >= 0) {
          out.push_back(static_cast<u8>(hex_value(b[0]) * 16 + hex_value(b[1])));
          b += 2;
          break;
        }
        [[fallthrough]];
      default:
        out.push_back('\\');
        out.push_back(c);
    }
  }
}

// Appends the UTF-8 of code point cp (< 0x110000).
inline void put_utf8(std::uint32_t cp, std::vector<u8>& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<u8>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<u8>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<u8>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<u8>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<u8>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<u8>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<u8>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<u8>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<u8>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<u8>(0x80 | (cp & 0x3F)));
  }
}

inline bool hex4(const u8* p, std::uint32_t& v) {
  v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = hex_value(p[i]);
    if (h < 0) return false;
    v = (v << 4) | static_cast<std::uint32_t>(h);
  }
  return true;
}

// Appends a JSON string's content (checked by scan_json_string) with its escapes decoded; a lone
// surrogate \uD800-\uDFFF becomes U+FFFD.
inline void decode_json_string(const u8* b, const u8* e, std::vector<u8>& out) {
  while (b < e) {
    const u8* q = find(b, e, '\\');
    out.insert(out.end(), b, q);
    if (q == e) break;
    const u8 c = q[1];  // scan_json_string checked the escape
    b = q + 2;
    switch (c) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        std::uint32_t cp;
        hex4(b, cp);
        b += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t lo;
          if (e - b >= 6 && b[0] == '\\' && b[1] == 'u' && hex4(b + 2, lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            b += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        put_utf8(cp, out);
        break;
      }
      default: out.push_back(c);  // " \ /
    }
  }
}

inline const u8* skip_ws(const u8* p, const u8* e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  return p;
}

// p just past a string's opening quote: returns the closing quote (or nullptr if the string is
// not valid JSON: a raw control byte, a bad escape, no closing quote); escaped says whether it
// holds a backslash.
inline const u8* scan_json_string(const u8* p, const u8* e, bool& escaped) {
  escaped = false;
  while (p < e) {
    const u8 c = *p;
    if (c == '"') return p;
    if (c < 0x20) return nullptr;
    if (c == '\\') {
      escaped = true;
      if (e - p < 2) return nullptr;
      const u8 x = p[1];
      if (x == 'u') {
        std::uint32_t v;
        if (e - p < 6 || !hex4(p + 2, v)) return nullptr;
        p += 6;
        continue;
      }
      if (x != '"' && x != '\\' && x != '/' && x != 'b' && x != 'f' && x != 'n' && x != 'r' && x != 't') return nullptr;
      p += 2;
      continue;
    }
    ++p;
  }
  return nullptr;
}

// A JSON number at p: returns its end, or nullptr.
inline const u8* scan_json_number(const u8* p, const u8* e) {
  if (p < e && *p == '-') ++p;
  if (p == e) return nullptr;
  if (*p == '0') {
    ++p;
  } else if (is_digit(*p)) {
    while (p < e && is_digit(*p)) ++p;
  } else {
    return nullptr;
  }
  if (p < e && *p == '.') {
    ++p;
    if (p == e || !is_digit(*p)) return nullptr;
    while (p < e && is_digit(*p)) ++p;
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < e && (*p == '+' || *p == '-')) ++p;
    if (p == e || !is_digit(*p)) return nullptr;
    while (p < e && is_digit(*p)) ++p;
  }
  return p;
}

inline const u8* scan_literal(const u8* p, const u8* e, const char* word, std::size_t n) {
  if (static_cast<std::size_t>(e - p) < n || std::memcmp(p, word, n) != 0) return nullptr;
  return p + n;
}

// Deepest nesting of arrays and objects a JSON line may have (deeper lines do not parse).
inline constexpr int kMaxJsonDepth = 256;

// Any JSON value at p (after whitespace): returns its end, or nullptr if it is not valid JSON.
// Iterative, with the open containers kept as bits: no recursion, no allocation.
inline const u8* scan_json_value(const u8* p, const u8* e) {
  std::uint64_t stack[kMaxJsonDepth / 64] = {};  // bit set: an object, clear: an array
  int depth = 0;
  const auto top_is_object = [&] { return (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1u; };
  bool want_key = false;
  for (;;) {
    p = skip_ws(p, e);
    if (p == e) return nullptr;
    if (want_key) {  // in an object, after '{' or ',': a key, ':' and then a value
      bool esc;
      if (*p != '"') return nullptr;
      const u8* q = scan_json_string(p + 1, e, esc);
      if (!q) return nullptr;
      p = skip_ws(q + 1, e);
      if (p == e || *p != ':') return nullptr;
      p = skip_ws(p + 1, e);
      if (p == e) return nullptr;
      want_key = false;
    }
    // a value
    const u8 c = *p;
    if (c == '{' || c == '[') {
      if (depth == kMaxJsonDepth) return nullptr;
      const std::uint64_t bit = std::uint64_t{1} << (depth % 64);
      if (c == '{') stack[depth / 64] |= bit;
      else stack[depth / 64] &= ~bit;
      ++depth;
      p = skip_ws(p + 1, e);
      if (p < e && *p == (c == '{' ? '}' : ']')) {
        --depth;
        ++p;
      } else {
        want_key = c == '{';
        continue;
      }
    } else if (c == '"') {
      bool esc;
      const u8* q = scan_json_string(p + 1, e, esc);
      if (!q) return nullptr;
      p = q + 1;
    } else if (c == 't') {
      if (!(p = scan_literal(p, e, "true", 4))) return nullptr;
    } else if (c == 'f') {
      if (!(p = scan_literal(p, e, "false", 5))) return nullptr;
    } else if (c == 'n') {
      if (!(p = scan_literal(p, e, "null", 4))) return nullptr;
    } else {
      if (!(p = scan_json_number(p, e))) return nullptr;
    }
    // after a value: close containers, or a ',' before the next element
    for (;;) {
      if (depth == 0) return p;
      p = skip_ws(p, e);
      if (p == e) return nullptr;
      const bool object = top_is_object();
      if (*p == ',') {
        ++p;
        want_key = object;
        break;
      }
      if (*p != (object ? '}' : ']')) return nullptr;
      --depth;
      ++p;
    }
  }
}

}  // namespace log_detail

// The format of a name: "common", "combined", "json" or "regex".
inline LogFormat parse_log_format(std::string_view name) {
  if (name == "common") return LogFormat::common;
  if (name == "combined") return LogFormat::combined;
  if (name == "json") return LogFormat::json;
  if (name == "regex") return LogFormat::regex;
  throw ParameterError("unknown log format '" + std::string(name) + "': use common, combined, json or regex");
}

// Extracts the requested fields of lines in one format. Construct once (a regex is compiled
// here), then parse() blocks; parse() is const and may run in several threads at once.
class LogParser {
 public:
  struct Options {
    bool strip_query = false;              // path: drop the query string, from the first '?'
    std::size_t max_line = std::size_t{1} << 20;  // longer lines are bad (BadLine::too_long)
    bool replace_invalid_utf8 = false;     // parse a line with ill-formed UTF-8 replaced by U+FFFD
  };

  // fields: for common/combined, names of kLogFieldNames; for json, top-level keys; for regex,
  // the pattern's named groups. pattern: the regex format's ECMAScript pattern, with named groups
  // written (?P<name>...) or (?<name>...); searched anywhere in the line (anchor it with ^...$).
  LogParser(LogFormat format, std::vector<std::string> fields, const Options& options, std::string_view pattern = {})
      : format_(format), fields_(std::move(fields)), opt_(options) {
    if (opt_.max_line < 1) throw ParameterError("max_line_bytes must be >= 1");
    if (fields_.empty()) throw ParameterError("name at least one field to extract");
    for (std::size_t i = 0; i < fields_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (fields_[i] == fields_[j]) throw ParameterError("the field '" + fields_[i] + "' is asked for twice");
    if (format_ == LogFormat::regex) {
      compile_regex(pattern);
    } else if (!pattern.empty()) {
      throw ParameterError("a pattern is given with the regex format only");
    }
    if (format_ == LogFormat::common || format_ == LogFormat::combined) {
      for (const std::string& f : fields_) {
        std::size_t k = 0;
        while (k < kLogFieldCount && kLogFieldNames[k] != f) ++k;
        if (k == kLogFieldCount || !log_field_in(static_cast<LogField>(k), format_)) {
          std::string names;
          for (std::size_t i = 0; i < kLogFieldCount; ++i)
            if (log_field_in(static_cast<LogField>(i), format_)) names += (names.empty() ? "" : ", ") + std::string(kLogFieldNames[i]);
          throw ParameterError("the " + std::string(format_ == LogFormat::common ? "common" : "combined") +
                               " log format has no field '" + f + "'; its fields are " + names);
        }
        named_.push_back(static_cast<LogField>(k));
      }
    }
  }

  LogFormat format() const noexcept { return format_; }
  const std::vector<std::string>& fields() const noexcept { return fields_; }
  bool field_is_int(std::size_t i) const {
    return (format_ == LogFormat::common || format_ == LogFormat::combined) && log_field_is_int(named_[i]);
  }

  // Parses every line of p[0, size) (the last line need not end with a line end). Line ends are
  // those of split_lines: \n, \r\n, \r. Lines are stripped of whitespace as split_lines strips
  // them; blank lines are skipped and listed.
  LogBatch parse(const u8* p, std::size_t size) const {
    LogBatch out;
    const std::size_t nf = fields_.size();
    out.columns.resize(nf);
    // room for lines of 32 bytes on average without a counting pass (untouched pages cost nothing;
    // shorter lines grow the vectors as usual)
    const std::size_t guess = size / 32 + 16;
    for (std::size_t i = 0; i < nf; ++i) {
      LogColumn& c = out.columns[i];
      c.name = fields_[i];
      c.is_int = field_is_int(i);
      c.validity.reserve(guess / 8 + 1);
      if (c.is_int) {
        c.values.reserve(guess);
      } else {
        c.offsets.reserve(guess + 1);
        c.data.reserve(std::min<std::size_t>(size, guess * 16));
      }
    }
    std::vector<log_detail::Slice> slices(nf);
    Scratch scratch;
    // UTF-8 is checked once over the whole block; only when that fails line by line.
    const bool block_ok = valid_utf8(p, p + size);
    std::size_t pos = 0;
    while (pos < size) {
      const std::size_t e = line_end(p, pos, size);
      std::size_t next = e;
      if (e < size) next = (p[e] == '\r' && e + 1 < size && p[e + 1] == '\n') ? e + 2 : e + 1;
      const u8* b = p + pos;
      const u8* f = p + e;
      const u8* readable = p + size;  // what the field search may read past the line (never written)
      const auto line = static_cast<std::int64_t>(out.lines++);
      pos = next;
      if (static_cast<std::size_t>(f - b) > opt_.max_line) {
        out.bad.push_back(line);
        out.bad_reason.push_back(static_cast<u8>(BadLine::too_long));
        continue;
      }
      if (!block_ok && !valid_utf8(b, f)) {
        if (!opt_.replace_invalid_utf8) {
          out.bad.push_back(line);
          out.bad_reason.push_back(static_cast<u8>(BadLine::utf8));
          continue;
        }
        replace_invalid(b, f, scratch.fixed);
        b = scratch.fixed.data();
        f = b + scratch.fixed.size();
        readable = f;  // a repaired copy: read nothing past it
      }
      strip(b, f);
      if (b == f) {
        out.blank.push_back(line);
        continue;
      }
      for (auto& s : slices) s = log_detail::Slice{};
      bool ok;
      switch (format_) {
        case LogFormat::common:
        case LogFormat::combined: ok = parse_access(b, f, readable, slices); break;
        case LogFormat::json: ok = parse_json(b, f, slices, scratch); break;
        default: ok = parse_regex(b, f, slices, scratch); break;
      }
      if (!ok) {
        out.bad.push_back(line);
        out.bad_reason.push_back(static_cast<u8>(BadLine::no_match));
        continue;
      }
      emit(out, slices, scratch);
      ++out.rows;
    }
    return out;
  }

 private:
  struct Scratch {
    std::vector<u8> fixed;    // a line with U+FFFD replacements
    std::vector<u8> decoded;  // a field with its escapes decoded
    std::vector<u8> valid;    // that, made valid UTF-8
    std::vector<u8> key;      // a JSON key with escapes decoded
    std::cmatch match;
  };

  using Slice = log_detail::Slice;

  void emit(LogBatch& out, const std::vector<Slice>& slices, Scratch& s) const {
    const std::size_t row = out.rows;
    for (std::size_t i = 0; i < slices.size(); ++i) {
      LogColumn& c = out.columns[i];
      const Slice& v = slices[i];
      if (!v.present) {
        c.push_null(row);
      } else if (c.is_int) {
        c.push_int(row, v.v);
      } else if (!v.escaped) {
        c.push_str(row, v.b, static_cast<std::size_t>(v.e - v.b));
      } else {
        // escapes to decode; or a regex group, which may cut a multi-byte character
        s.decoded.clear();
        if (format_ == LogFormat::json) log_detail::decode_json_string(v.b, v.e, s.decoded);
        else if (format_ == LogFormat::regex) s.decoded.assign(v.b, v.e);
        else log_detail::decode_log_escapes(v.b, v.e, s.decoded);
        const u8* db = s.decoded.data();
        std::size_t dn = s.decoded.size();
        if (!valid_utf8(db, db + dn)) {  // \xHH escapes of bytes that are not UTF-8, a cut character
          replace_invalid(db, db + dn, s.valid);
          db = s.valid.data();
          dn = s.valid.size();
        }
        c.push_str(row, db, dn);
      }
    }
  }

  // --- common / combined ---

  // A token up to the next blank; p moves past it and the blanks after it.
  DPSKETCH_ALWAYS_INLINE static bool token(const u8*& p, const u8* e, const u8* readable, const u8*& tb, const u8*& te) {
    tb = p;
    p = log_detail::find_either(p, e, ' ', '\t', readable);
    te = p;
    return te > tb;
  }
  DPSKETCH_ALWAYS_INLINE static bool blanks(const u8*& p, const u8* e, bool required) {
    if (p == e) return !required;
    if (!log_detail::is_blank(*p)) return false;
    ++p;  // usually the only one
    while (p < e && log_detail::is_blank(*p)) ++p;
    return true;
  }
  // A quoted field at p ("..." with backslash escapes); [qb, qe) its content, esc if it holds one.
  // One pass: the next quote or backslash, 16 bytes at a time; a backslash escapes the next byte.
  DPSKETCH_ALWAYS_INLINE static bool quoted(const u8*& p, const u8* e, const u8* readable, const u8*& qb, const u8*& qe, bool& esc) {
    if (p == e || *p != '"') return false;
    qb = p + 1;
    esc = false;
    const u8* q = qb;
    for (;;) {
      q = log_detail::find_either(q, e, '"', '\\', readable);
      if (q == e) return false;
      if (*q == '"') break;
      esc = true;
      q += 2;  // the backslash and the byte it escapes
      if (q >= e) return false;
    }
    qe = q;
    p = q + 1;
    return true;
  }

  DPSKETCH_ALWAYS_INLINE static bool is_dash(const u8* b, const u8* e) { return e - b == 1 && *b == '-'; }

  // readable: the end of the bytes that may be read (the block's end, or e for a repaired copy).
  bool parse_access(const u8* p, const u8* e, const u8* readable, std::vector<Slice>& out) const {
    const u8 *host_b, *host_e, *ident_b, *ident_e, *user_b, *user_e, *status_b, *status_e, *bytes_b, *bytes_e;
    const u8 *req_b, *req_e, *ref_b = nullptr, *ref_e = nullptr, *ua_b = nullptr, *ua_e = nullptr;
    bool req_esc, ref_esc = false, ua_esc = false;
    if (!token(p, e, readable, host_b, host_e) || !blanks(p, e, true)) return false;
    if (!token(p, e, readable, ident_b, ident_e) || !blanks(p, e, true)) return false;
    if (!token(p, e, readable, user_b, user_e) || !blanks(p, e, true)) return false;
    if (p == e || *p != '[') return false;
    const u8* time_b = p + 1;
    const u8* time_e = log_detail::find(time_b, e, ']');
    if (time_e == e) return false;
    p = time_e + 1;
    if (!blanks(p, e, true) || !quoted(p, e, readable, req_b, req_e, req_esc) || !blanks(p, e, true)) return false;
    if (!token(p, e, readable, status_b, status_e)) return false;
    std::int64_t status = 0, bytes = 0;
    const bool status_dash = is_dash(status_b, status_e);
    if (!status_dash && !log_detail::parse_digits(status_b, status_e, status)) return false;
    if (!blanks(p, e, true) || !token(p, e, readable, bytes_b, bytes_e)) return false;
    const bool bytes_dash = is_dash(bytes_b, bytes_e);
    if (!bytes_dash && !log_detail::parse_digits(bytes_b, bytes_e, bytes)) return false;
    if (format_ == LogFormat::combined) {
      if (!blanks(p, e, true) || !quoted(p, e, readable, ref_b, ref_e, ref_esc)) return false;
      if (!blanks(p, e, true) || !quoted(p, e, readable, ua_b, ua_e, ua_esc)) return false;
    }
    // fields an extended format adds after these are ignored
    if (!blanks(p, e, false)) return false;

    for (std::size_t i = 0; i < named_.size(); ++i) {
      Slice& s = out[i];
      const auto set = [&s](const u8* b, const u8* f, bool esc = false) {
        if (is_dash(b, f)) return;
        s.b = b;
        s.e = f;
        s.escaped = esc;
        s.present = true;
      };
      switch (named_[i]) {
        case LogField::host: set(host_b, host_e); break;
        case LogField::ident: set(ident_b, ident_e); break;
        case LogField::user: set(user_b, user_e); break;
        case LogField::time: set(time_b, time_e); break;
        case LogField::timestamp:
          s.present = log_detail::parse_clf_time(time_b, time_e, s.v);
          break;
        case LogField::request: set(req_b, req_e, req_esc); break;
        case LogField::method:
        case LogField::path:
        case LogField::protocol: {
          if (is_dash(req_b, req_e)) break;
          // METHOD SP TARGET [SP HTTP/x]: spaces are never escaped in these logs
          const u8* sp = log_detail::find(req_b, req_e, ' ');
          if (sp == req_e) break;
          const u8* tb = sp + 1;
          const u8* te = req_e;
          const u8* pb = nullptr;
          const u8* last = te;
          if (te - tb >= 9 && te[-9] == ' ' && std::memcmp(te - 8, "HTTP/", 5) == 0 && te[-3] != ' ' &&
              te[-2] != ' ' && te[-1] != ' ')
            last = te - 8;  // " HTTP/x.y", the common case: the loop below would stop there too
          else
            while (last > tb && last[-1] != ' ') --last;
          if (last > tb && req_e - last >= 5 && std::memcmp(last, "HTTP/", 5) == 0) {
            pb = last;
            te = last - 1;
          }
          if (named_[i] == LogField::method) {
            set(req_b, sp, req_esc && log_detail::find(req_b, sp, '\\') != sp);
          } else if (named_[i] == LogField::protocol) {
            if (pb) set(pb, req_e, req_esc && log_detail::find(pb, req_e, '\\') != req_e);
          } else {
            if (opt_.strip_query) te = log_detail::find(tb, te, '?');
            if (te > tb) set(tb, te, req_esc && log_detail::find(tb, te, '\\') != te);
          }
          break;
        }
        case LogField::status:
          s.present = !status_dash;
          s.v = status;
          break;
        case LogField::bytes:
          s.present = !bytes_dash;
          s.v = bytes;
          break;
        case LogField::referer: set(ref_b, ref_e, ref_esc); break;
        case LogField::user_agent: set(ua_b, ua_e, ua_esc); break;
      }
    }
    return true;
  }

  // --- JSON lines ---

  bool parse_json(const u8* p, const u8* e, std::vector<Slice>& out, Scratch& s) const {
    using namespace log_detail;
    p = skip_ws(p, e);
    if (p == e || *p != '{') return false;
    p = skip_ws(p + 1, e);
    if (p < e && *p == '}') return skip_ws(p + 1, e) == e;
    for (;;) {
      if (p == e || *p != '"') return false;
      bool key_esc;
      const u8* kb = p + 1;
      const u8* ke = scan_json_string(kb, e, key_esc);
      if (!ke) return false;
      p = skip_ws(ke + 1, e);
      if (p == e || *p != ':') return false;
      p = skip_ws(p + 1, e);
      if (p == e) return false;
      // the requested field this key names, if any (a repeated key: the last one wins)
      std::size_t want = fields_.size();
      std::string_view key(reinterpret_cast<const char*>(kb), static_cast<std::size_t>(ke - kb));
      if (key_esc) {
        s.key.clear();
        decode_json_string(kb, ke, s.key);
        key = std::string_view(reinterpret_cast<const char*>(s.key.data()), s.key.size());
      }
      for (std::size_t i = 0; i < fields_.size(); ++i)
        if (fields_[i] == key) want = i;
      const u8* vb = p;
      bool esc = false;
      bool present = true;
      if (*p == '"') {
        const u8* q = scan_json_string(p + 1, e, esc);
        if (!q) return false;
        vb = p + 1;
        p = q + 1;
        if (want < out.size()) out[want] = Slice{vb, q, esc, true, false, 0};
      } else {
        if (*p == 'n') present = false;
        p = scan_json_value(p, e);
        if (!p) return false;
        if (want < out.size()) out[want] = Slice{vb, p, false, present, false, 0};
      }
      p = skip_ws(p, e);
      if (p == e) return false;
      if (*p == '}') return skip_ws(p + 1, e) == e;
      if (*p != ',') return false;
      p = skip_ws(p + 1, e);
    }
  }

  // --- regular expression ---

  void compile_regex(std::string_view pattern) {
    if (pattern.empty()) throw ParameterError("the regex format needs a pattern with named groups");
    if (pattern.size() > 4096) throw ParameterError("the pattern is longer than 4096 bytes");
    // Named groups become plain groups; their numbers are counted as std::regex counts them.
    std::string plain;
    std::vector<std::string> names;  // names[k]: the name of group k + 1 ("" unnamed)
    int depth = 0;
    bool in_class = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c == '\\') {
        plain += c;
        if (i + 1 < pattern.size()) plain += pattern[++i];
        continue;
      }
      if (in_class) {
        if (c == ']') in_class = false;
        plain += c;
        continue;
      }
      if (c == '[') {
        in_class = true;
        plain += c;
        if (i + 1 < pattern.size() && pattern[i + 1] == '^') plain += pattern[++i];
        if (i + 1 < pattern.size() && pattern[i + 1] == ']') plain += pattern[++i];  // a leading ']' is literal
        continue;
      }
      if (c == ')') --depth;
      if (c != '(') {
        plain += c;
        continue;
      }
      if (++depth > 64) throw ParameterError("the pattern nests groups more than 64 deep");
      std::size_t name_at = 0;
      if (pattern.compare(i, 4, "(?P<") == 0) name_at = i + 4;
      else if (pattern.compare(i, 3, "(?<") == 0 && i + 3 < pattern.size() && pattern[i + 3] != '=' && pattern[i + 3] != '!')
        name_at = i + 3;
      if (name_at) {
        const std::size_t close = pattern.find('>', name_at);
        if (close == std::string_view::npos) throw ParameterError("a group name in the pattern is not closed by '>'");
        const std::string name(pattern.substr(name_at, close - name_at));
        bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
        for (char ch : name) ok = ok && (ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'));
        if (!ok) throw ParameterError("the group name '" + name + "' is not a word (letters, digits, _)");
        if (std::find(names.begin(), names.end(), name) != names.end())
          throw ParameterError("the group name '" + name + "' appears twice in the pattern");
        names.push_back(name);
        plain += '(';
        i = close;
      } else {
        if (i + 1 >= pattern.size() || pattern[i + 1] != '?') names.emplace_back();  // a plain capturing group
        plain += c;
      }
    }
    try {
      regex_ = std::regex(plain, std::regex::ECMAScript | std::regex_constants::__polynomial);
    } catch (const std::regex_error& err) {
      throw ParameterError(std::string("the pattern is not a valid regular expression (ECMAScript syntax, no "
                                       "back-references): ") + err.what());
    }
    if (regex_.mark_count() != names.size())
      throw ParameterError("the pattern's groups could not be counted (write named groups as (?P<name>...))");
    for (const std::string& f : fields_) {
      const auto it = std::find(names.begin(), names.end(), f);
      if (it == names.end()) {
        std::string known;
        for (const std::string& n : names)
          if (!n.empty()) known += (known.empty() ? "" : ", ") + n;
        throw ParameterError("the pattern has no group named '" + f + "'" +
                             (known.empty() ? std::string("; it has no named group") : "; its named groups are " + known));
      }
      group_.push_back(static_cast<std::size_t>(it - names.begin()) + 1);
    }
  }

  bool parse_regex(const u8* b, const u8* e, std::vector<Slice>& out, Scratch& s) const {
    const auto* cb = reinterpret_cast<const char*>(b);
    const auto* ce = reinterpret_cast<const char*>(e);
    if (!std::regex_search(cb, ce, s.match, regex_)) return false;
    for (std::size_t i = 0; i < group_.size(); ++i) {
      const auto& g = s.match[static_cast<int>(group_[i])];
      if (!g.matched) continue;
      const auto* gb = reinterpret_cast<const u8*>(g.first);
      const auto* ge = reinterpret_cast<const u8*>(g.second);
      // a group that starts or ends inside a multi-byte character is repaired in emit()
      const bool cut = (gb > b && gb < e && (*gb & 0xC0) == 0x80) || (ge < e && (*ge & 0xC0) == 0x80);
      out[i] = Slice{gb, ge, cut, true, false, 0};
    }
    return true;
  }

  LogFormat format_;
  std::vector<std::string> fields_;
  Options opt_;
  std::vector<LogField> named_;      // common/combined: the field of each requested name
  std::regex regex_;
  std::vector<std::size_t> group_;   // regex: the group number of each requested name
};

}  // namespace dpsketch::io
