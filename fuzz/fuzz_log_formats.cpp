// libFuzzer target: the log parser (dpsketch/io/log_formats.hpp) on any bytes. The first byte
// picks the format (common, combined, JSON lines, or one of a few regular expressions) and the
// options (strip_query, replace_invalid_utf8, a small max_line_bytes); the rest is the block.
// Whatever the bytes, parse() returns (never throws or crashes) and its result is consistent:
// every line is a row, blank or bad exactly once; the columns have one entry per row, offsets
// that stay in their data, null counts that match the validity bits, and only valid UTF-8 strings;
// a JSON line accepted by the parser is accepted again with every field asked for.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpsketch/io/log_formats.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace dpsketch::io;

void check_batch(const LogBatch& b, std::size_t nf) {
  FUZZ_CHECK(b.columns.size() == nf);
  FUZZ_CHECK(b.rows + b.blank.size() + b.bad.size() == b.lines);
  FUZZ_CHECK(b.bad.size() == b.bad_reason.size());
  for (std::size_t i = 0; i < b.bad.size(); ++i) {
    FUZZ_CHECK(b.bad[i] >= 0 && static_cast<std::size_t>(b.bad[i]) < b.lines);
    FUZZ_CHECK(i == 0 || b.bad[i] > b.bad[i - 1]);
    FUZZ_CHECK(b.bad_reason[i] >= 1 && b.bad_reason[i] <= 3);
  }
  for (const LogColumn& c : b.columns) {
    FUZZ_CHECK(c.validity.size() == (b.rows + 7) / 8);
    std::size_t nulls = 0;
    for (std::size_t r = 0; r < b.rows; ++r) nulls += !((c.validity[r / 8] >> (r % 8)) & 1);
    FUZZ_CHECK(nulls == c.null_count);
    if (c.is_int) {
      FUZZ_CHECK(c.values.size() == b.rows);
      continue;
    }
    FUZZ_CHECK(c.offsets.size() == b.rows + 1 && c.offsets[0] == 0);
    for (std::size_t r = 0; r < b.rows; ++r) FUZZ_CHECK(c.offsets[r] <= c.offsets[r + 1]);
    FUZZ_CHECK(static_cast<std::size_t>(c.offsets[b.rows]) == c.data.size());
    FUZZ_CHECK(valid_utf8(c.data.data(), c.data.data() + c.data.size()));  // each value is, since lines are
  }
}

const char* const kPatterns[] = {
    "^(?P<host>\\S+) \\S+ (?P<user>\\S+) \\[(?P<time>[^\\]]*)\\] \"(?P<request>[^\"]*)\"",
    "(?P<a>.)(?P<b>.*)",
    "(?<a>(a|b)*c)?(?P<b>[^x]+)$",
};

LogParser make_parser(std::uint8_t mode) {
  LogParser::Options o;
  o.strip_query = mode & 0x10;
  o.replace_invalid_utf8 = mode & 0x20;
  o.max_line = (mode & 0x40) ? 24 : std::size_t{1} << 20;
  const unsigned pick = mode & 0x0F;
  std::vector<std::string> fields;
  if (pick < 4) {
    const LogFormat f = pick < 2 ? LogFormat::common : LogFormat::combined;
    for (std::size_t i = 0; i < kLogFieldCount; ++i)
      if (log_field_in(static_cast<LogField>(i), f)) fields.emplace_back(kLogFieldNames[i]);
    return LogParser(f, fields, o);
  }
  if (pick < 10) return LogParser(LogFormat::json, {"path", "a", "", "\xC3\xA9", "user"}, o);
  fields = pick % 3 == 0 ? std::vector<std::string>{"host", "user", "time", "request"}
                         : std::vector<std::string>{"a", "b"};
  return LogParser(LogFormat::regex, fields, o, kPatterns[pick % 3]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Cursor in(data, size);
  const std::uint8_t mode = in.u8();
  const std::string_view rest = in.rest();
  const auto* p = reinterpret_cast<const u8*>(rest.data());
  // parsers are built once per mode (a regex compiles slowly) and reused: parse() is const
  static std::unique_ptr<LogParser> parsers[128];
  std::unique_ptr<LogParser>& slot = parsers[mode & 0x7F];
  if (!slot) slot = std::make_unique<LogParser>(make_parser(mode));
  const LogParser& parser = *slot;
  const std::size_t nf = parser.fields().size();
  const LogFormat f = parser.format();
  LogParser::Options o;
  o.strip_query = mode & 0x10;
  o.replace_invalid_utf8 = mode & 0x20;
  o.max_line = (mode & 0x40) ? 24 : std::size_t{1} << 20;
  const LogBatch b = parser.parse(p, rest.size());
  check_batch(b, nf);
  if (f == LogFormat::json && b.rows > 0) {  // the verdict on a line does not depend on the fields
    const LogParser one(f, {"path"}, o);
    const LogBatch c = one.parse(p, rest.size());
    FUZZ_CHECK(c.bad == b.bad && c.rows == b.rows);
  }
  return 0;
}
