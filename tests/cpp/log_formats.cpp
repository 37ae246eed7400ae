// The io headers (dpsketch/io/): the log parser's fields for each format on written-out lines
// (quotes, escapes, '-' for missing, IPv6 hosts, JSON escapes and nesting, regex groups), its bad
// lines with their reasons, the line splitter on a few blocks, and the pair coder on one batch.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpsketch/io/line_splitter.hpp"
#include "dpsketch/io/log_formats.hpp"
#include "dpsketch/privacy_unit/pair_coder.hpp"

using namespace dpsketch::io;

namespace {

int failures = 0;

void check(bool ok, const char* what, int line) {
  if (!ok) {
    ++failures;
    std::printf("FAIL line %d: %s\n", line, what);
  }
}
#define CHECK(c) check((c), #c, __LINE__)

LogBatch run(LogFormat f, std::vector<std::string> fields, std::string_view text, LogParser::Options o = {},
             std::string_view pattern = {}) {
  const LogParser p(f, std::move(fields), o, pattern);
  return p.parse(reinterpret_cast<const u8*>(text.data()), text.size());
}

// Value of row r of a column: nullopt for a null, the string (or the int as text) otherwise.
std::optional<std::string> cell(const LogColumn& c, std::size_t r) {
  if (c.null_count && !((c.validity[r / 8] >> (r % 8)) & 1)) return std::nullopt;
  if (c.is_int) return std::to_string(c.values[r]);
  return std::string(reinterpret_cast<const char*>(c.data.data()) + c.offsets[r],
                     static_cast<std::size_t>(c.offsets[r + 1] - c.offsets[r]));
}

bool throws(LogFormat f, std::vector<std::string> fields, std::string_view pattern = {}) {
  try {
    LogParser p(f, std::move(fields), LogParser::Options{}, pattern);
  } catch (const dpsketch::ParameterError&) {
    return true;
  }
  return false;
}

void access_logs() {
  const std::string text =
      "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif?x=1&y=2 HTTP/1.0\" 200 2326 "
      "\"http://www.example.com/start.html\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\"\n"
      "2001:db8::1 - - [01/Jan/1970:00:00:00 +0000] \"POST /a\\\"b\\\\c\\x41\\xff HTTP/1.1\" 404 - \"-\" \"-\"\r\n"
      "\n"
      "10.0.0.1 - - [bad time] \"-\" 400 0 \"-\" \"curl/8.0 \\\"q\\\"\" \"extra\" 0.003\n"
      "not a log line\n"
      "10.0.0.2 - - [10/Oct/2000:13:55:36 +0100] \"GET /only\" 200 12 \"r\" \"u\"";
  const LogBatch b = run(LogFormat::combined,
                         {"host", "user", "time", "timestamp", "method", "path", "protocol", "status", "bytes",
                          "referer", "user_agent", "request"},
                         text);
  CHECK(b.lines == 6);
  CHECK(b.rows == 4);
  CHECK(b.blank.size() == 1 && b.blank[0] == 2);
  CHECK(b.bad.size() == 1 && b.bad[0] == 4 && b.bad_reason[0] == static_cast<u8>(BadLine::no_match));
  const auto& c = b.columns;
  CHECK(cell(c[0], 0) == "127.0.0.1");
  CHECK(cell(c[1], 0) == "frank");
  CHECK(cell(c[2], 0) == "10/Oct/2000:13:55:36 -0700");
  CHECK(cell(c[3], 0) == "971211336");
  CHECK(cell(c[4], 0) == "GET");
  CHECK(cell(c[5], 0) == "/apache_pb.gif?x=1&y=2");
  CHECK(cell(c[6], 0) == "HTTP/1.0");
  CHECK(cell(c[7], 0) == "200");
  CHECK(cell(c[8], 0) == "2326");
  CHECK(cell(c[9], 0) == "http://www.example.com/start.html");
  CHECK(cell(c[10], 0) == "Mozilla/4.08 [en] (Win98; I ;Nav)");
  // IPv6 host, escapes decoded (\xff is not UTF-8: U+FFFD), '-' is null
  CHECK(cell(c[0], 1) == "2001:db8::1");
  CHECK(cell(c[1], 1) == std::nullopt);
  CHECK(cell(c[3], 1) == "0");
  CHECK(cell(c[4], 1) == "POST");
  CHECK(cell(c[5], 1) == "/a\"b\\cA\xEF\xBF\xBD");
  CHECK(cell(c[8], 1) == std::nullopt);
  CHECK(cell(c[9], 1) == std::nullopt);
  CHECK(cell(c[10], 1) == std::nullopt);
  // request "-": no method, path or protocol; a time that is not CLF: no timestamp; extra fields ignored
  CHECK(cell(c[3], 2) == std::nullopt);
  CHECK(cell(c[2], 2) == "bad time");
  CHECK(cell(c[4], 2) == std::nullopt && cell(c[5], 2) == std::nullopt && cell(c[11], 2) == std::nullopt);
  CHECK(cell(c[10], 2) == "curl/8.0 \"q\"");
  CHECK(cell(c[8], 2) == "0");
  // HTTP/0.9 style request: no protocol
  CHECK(cell(c[5], 3) == "/only" && cell(c[6], 3) == std::nullopt);
  CHECK(cell(c[3], 3) == "971182536");

  // strip_query; the common format reads the combined lines (extra fields ignored)
  LogParser::Options o;
  o.strip_query = true;
  const LogBatch s = run(LogFormat::common, {"path", "bytes"}, text, o);
  CHECK(s.rows == 4);
  CHECK(cell(s.columns[0], 0) == "/apache_pb.gif");
  // a status that is not a number, a missing closing quote: bad lines
  const LogBatch bad = run(LogFormat::common, {"host"},
                           "h - - [t] \"GET / HTTP/1.0\" 2x0 1\nh - - [t] \"GET / HTTP/1.0 200 1\nh - - [t] \"a\" 1 1");
  CHECK(bad.rows == 1 && bad.bad.size() == 2);
  // unknown fields and combined-only fields are refused
  CHECK(throws(LogFormat::common, {"referer"}));
  CHECK(throws(LogFormat::combined, {"nope"}));
  CHECK(throws(LogFormat::combined, {"host", "host"}));
  CHECK(throws(LogFormat::combined, {}));
}

void json_lines() {
  const std::string text =
      "{\"path\": \"/a\\u00e9\\\"\\n\", \"n\": -1.5e3, \"user\": null, \"obj\": {\"x\": [1, {\"y\": \"}\"}]}}\n"
      "{\"n\": 7, \"path\": \"/b\", \"path\": \"/c\", \"obj\": [] }\n"
      "{\"p\\u0061th\": \"\\ud83d\\ude00 \\ud800\"}\n"
      "{\"path\": \"/x\"} trailing\n"
      "[1, 2]\n"
      "{\"path\": \"/x\", }\n"
      "{\"path\": 01}\n"
      "{}\n";
  const LogBatch b = run(LogFormat::json, {"path", "n", "user", "obj", "missing"}, text);
  CHECK(b.lines == 8);
  CHECK(b.rows == 4);
  CHECK(b.bad.size() == 4);
  const auto& c = b.columns;
  CHECK(cell(c[0], 0) == "/a\xC3\xA9\"\n");
  CHECK(cell(c[1], 0) == "-1.5e3");
  CHECK(cell(c[2], 0) == std::nullopt);
  CHECK(cell(c[3], 0) == "{\"x\": [1, {\"y\": \"}\"}]}");
  CHECK(cell(c[4], 0) == std::nullopt);
  CHECK(cell(c[0], 1) == "/c");
  CHECK(cell(c[1], 1) == "7");
  CHECK(cell(c[3], 1) == "[]");
  CHECK(cell(c[0], 2) == "\xF0\x9F\x98\x80 \xEF\xBF\xBD");
  CHECK(cell(c[0], 3) == std::nullopt);
  // deep nesting is bounded, not recursive
  std::string deep = "{\"a\": " + std::string(300, '[') + std::string(300, ']') + "}";
  CHECK(run(LogFormat::json, {"a"}, deep).bad.size() == 1);
  deep = "{\"a\": " + std::string(200, '[') + std::string(200, ']') + "}";
  CHECK(run(LogFormat::json, {"a"}, deep).rows == 1);
}

void regexes() {
  const std::string text = "user=alice path=/x\nuser=bob\nnothing here\nuser=eve path=/\xC3\xA9\n";
  const LogBatch b =
      run(LogFormat::regex, {"user", "path"}, text, {}, "user=(?P<user>\\w+)(?: path=(?<path>\\S+))?");
  CHECK(b.rows == 3 && b.bad.size() == 1 && b.bad[0] == 2);
  CHECK(cell(b.columns[0], 0) == "alice" && cell(b.columns[1], 0) == "/x");
  CHECK(cell(b.columns[0], 1) == "bob" && cell(b.columns[1], 1) == std::nullopt);
  CHECK(cell(b.columns[1], 2) == "/\xC3\xA9");
  // a group cut inside a multi-byte character: U+FFFD, never invalid UTF-8
  const LogBatch cut = run(LogFormat::regex, {"b"}, "\xC3\xA9", {}, "(?P<b>.)");
  CHECK(cut.rows == 1 && cell(cut.columns[0], 0) == "\xEF\xBF\xBD");
  CHECK(throws(LogFormat::regex, {"x"}, "(?P<y>a)"));
  CHECK(throws(LogFormat::regex, {"x"}, "(?P<x>a"));
  CHECK(throws(LogFormat::regex, {"x"}, "(?P<x>a)\\1"));
  CHECK(throws(LogFormat::regex, {"x"}, ""));
  CHECK(throws(LogFormat::json, {"x"}, "(?P<x>a)"));
}

void bad_bytes() {
  const std::string text = "{\"a\": \"\xff\"}\n{\"a\": \"" + std::string(100, 'x') + "\"}\n{\"a\": \"ok\"}\n";
  LogParser::Options o;
  o.max_line = 50;
  const LogBatch b = run(LogFormat::json, {"a"}, text, o);
  CHECK(b.rows == 1 && b.bad.size() == 2);
  CHECK(b.bad_reason[0] == static_cast<u8>(BadLine::utf8) && b.bad_reason[1] == static_cast<u8>(BadLine::too_long));
  o.replace_invalid_utf8 = true;
  const LogBatch r = run(LogFormat::json, {"a"}, text, o);
  CHECK(r.rows == 2 && cell(r.columns[0], 0) == "\xEF\xBF\xBD");
}

void splitter() {
  const std::string text = "  a \r\nb\r\rc\n\xff\nlast";
  SplitOptions o;
  o.final = true;
  o.max_line = 100;
  o.on_bad = kSkip;
  const SplitResult r = split_lines(reinterpret_cast<const u8*>(text.data()), text.size(), o);
  CHECK(r.lines == 6 && r.bad == 1);
  CHECK(r.offsets.size() == 5);
  CHECK(std::string(r.data.begin(), r.data.end()) == "abclast");
  CHECK(r.blank.size() == 1 && r.blank[0] == 2);
  o.on_bad = kError;
  const SplitResult e = split_lines(reinterpret_cast<const u8*>(text.data()), text.size(), o);
  CHECK(e.error == 1 && e.error_line == 4);
  // a final block's last line without a line end is checked too (it once escaped the block check)
  const std::string tail = "a\nb\n\xf8";
  const SplitResult t = split_lines(reinterpret_cast<const u8*>(tail.data()), tail.size(), o);
  CHECK(t.error == 1 && t.error_line == 2);
  o.int_keys = true;
  const std::string ints = "12\n-7\nx\n99999999999999999999\n";
  const SplitResult n = split_lines(reinterpret_cast<const u8*>(ints.data()), ints.size(), o);
  CHECK(n.ints.size() == 2 && n.ints[0] == 12 && n.ints[1] == -7);
}

void pair_coder() {
  using namespace dpsketch::privacy_unit;
  PairCoder coder(1, 2);
  const std::int64_t keys[] = {5, 5, 7};
  const std::int64_t offsets[] = {0, 1, 2, 3};
  const char units[] = "aab";
  ColumnBatch k{ColumnCodes::Kind::ints, 3, keys, nullptr, nullptr, nullptr, 0};
  ColumnBatch u{ColumnCodes::Kind::bytes, 3, nullptr, nullptr, offsets, units, 3};
  coder.add(k, u);
  CHECK(coder.rows() == 3 && coder.distinct_keys() == 2);
  std::int64_t counts[2];
  coder.bound(10, 10, nullptr, counts);
  CHECK(counts[0] == 2 && counts[1] == 1);
  CHECK(coder.positive_codes(counts, 2).size() == 2);
  bool threw = false;
  try {
    coder.add_keys(u);  // a str batch into an int column
  } catch (const dpsketch::ParameterError&) {
    threw = true;
  }
  CHECK(threw);
}

}  // namespace

int main() {
  access_logs();
  json_lines();
  regexes();
  bad_bytes();
  splitter();
  pair_coder();
  std::printf("%s log formats, line splitter, pair coder\n", failures ? "FAIL" : "ok  ");
  return failures ? 1 : 0;
}
