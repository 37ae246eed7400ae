// Log lines parsed into columns (docs/logs.md): dpsketch/io/log_formats.hpp run on a block of
// complete lines with the GIL released; the columns come back in Arrow's layouts as numpy arrays
// that own the parser's vectors (no copy), for pyarrow's Array.from_buffers.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/io/log_formats.hpp"

namespace py = pybind11;
using dpsketch::io::LogBatch;
using dpsketch::io::LogColumn;
using dpsketch::io::LogFormat;
using dpsketch::io::LogParser;
using dpsketch::io::u8;

namespace {

// A numpy array that owns the vector's memory (no copy).
template <class T>
py::array_t<T> owned(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* q) { delete static_cast<std::vector<T>*>(q); });
  return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

py::dict column_dict(LogColumn&& c) {
  py::dict d;
  const std::size_t nulls = c.null_count;
  if (c.is_int) {
    d["type"] = "int64";
    d["values"] = owned(std::move(c.values));
  } else {
    d["type"] = "string";
    d["data"] = owned(std::move(c.data));
    d["offsets"] = owned(std::move(c.offsets));
  }
  d["validity"] = nulls ? py::object(owned(std::move(c.validity))) : py::object(py::none());
  d["null_count"] = nulls;
  return d;
}

class PyLogParser {
 public:
  PyLogParser(const std::string& format, std::vector<std::string> fields, const std::optional<std::string>& pattern,
              bool strip_query, std::int64_t max_line_bytes, bool replace_invalid_utf8)
      : parser_(make(format, std::move(fields), pattern, strip_query, max_line_bytes, replace_invalid_utf8)),
        format_(format) {}

  py::dict parse(const py::buffer& block) const {
    const py::buffer_info info = block.request();
    if (info.ndim > 1 || info.itemsize != 1 || (info.ndim == 1 && info.strides[0] != 1))
      throw py::type_error("block must be a contiguous bytes-like object (bytes, bytearray, memoryview, uint8 array)");
    const auto* p = static_cast<const u8*>(info.ptr);
    const auto size = static_cast<std::size_t>(info.size);
    LogBatch b;
    {
      py::gil_scoped_release nogil;
      b = parser_.parse(p, size);
    }
    py::dict cols;
    for (LogColumn& c : b.columns) {
      const std::string name = c.name;
      cols[py::str(name)] = column_dict(std::move(c));
    }
    py::dict out;
    out["columns"] = cols;
    out["lines"] = b.lines;
    out["rows"] = b.rows;
    out["blank"] = owned(std::move(b.blank));
    out["bad"] = owned(std::move(b.bad));
    out["bad_reason"] = owned(std::move(b.bad_reason));
    return out;
  }

  const std::string& format() const noexcept { return format_; }
  const std::vector<std::string>& fields() const noexcept { return parser_.fields(); }

 private:
  static LogParser make(const std::string& format, std::vector<std::string> fields,
                        const std::optional<std::string>& pattern, bool strip_query, std::int64_t max_line_bytes,
                        bool replace_invalid_utf8) {
    if (max_line_bytes < 1) throw py::value_error("max_line_bytes must be >= 1");
    LogParser::Options o;
    o.strip_query = strip_query;
    o.max_line = static_cast<std::size_t>(max_line_bytes);
    o.replace_invalid_utf8 = replace_invalid_utf8;
    return LogParser(dpsketch::io::parse_log_format(format), std::move(fields), o, pattern ? *pattern : std::string());
  }

  LogParser parser_;
  std::string format_;
};

}  // namespace

void bind_logs(py::module_& root) {
  py::module_ m = root.def_submodule("logs", "log lines parsed into columns (docs/logs.md)");
  py::dict fields;
  for (const LogFormat f : {LogFormat::common, LogFormat::combined}) {
    py::list names;
    for (std::size_t i = 0; i < dpsketch::io::kLogFieldCount; ++i)
      if (dpsketch::io::log_field_in(static_cast<dpsketch::io::LogField>(i), f))
        names.append(py::str(std::string(dpsketch::io::kLogFieldNames[i])));
    fields[f == LogFormat::common ? "common" : "combined"] = py::tuple(names);
  }
  m.attr("FIELDS") = fields;
  py::list int_fields;
  for (std::size_t i = 0; i < dpsketch::io::kLogFieldCount; ++i)
    if (dpsketch::io::log_field_is_int(static_cast<dpsketch::io::LogField>(i)))
      int_fields.append(py::str(std::string(dpsketch::io::kLogFieldNames[i])));
  m.attr("INT_FIELDS") = py::tuple(int_fields);
  py::list reasons;
  for (const auto r : dpsketch::io::kBadLineReasons) reasons.append(py::str(std::string(r)));
  m.attr("BAD_LINE_REASONS") = py::tuple(reasons);

  py::class_<PyLogParser>(m, "LogParser",
                          "Extracts named fields from log lines: format 'common' or 'combined' (Apache/nginx access "
                          "logs), 'json' (JSON lines: top-level keys) or 'regex' (pattern with named groups).")
      .def(py::init<const std::string&, std::vector<std::string>, const std::optional<std::string>&, bool, std::int64_t,
                    bool>(),
           py::arg("format"), py::arg("fields"), py::arg("pattern") = py::none(), py::arg("strip_query") = false,
           py::arg("max_line_bytes") = std::int64_t{1} << 20, py::arg("replace_invalid_utf8") = false)
      .def("parse", &PyLogParser::parse, py::arg("block"),
           "Parse a block of complete lines (bytes-like), the GIL released. Returns a dict: columns {field: "
           "{'type': 'string', 'data', 'offsets', 'validity', 'null_count'} or {'type': 'int64', 'values', "
           "'validity', 'null_count'}} in Arrow layouts (validity: an Arrow bitmap, None without nulls), lines, "
           "rows, blank (line indices), bad (line indices of lines that did not parse), bad_reason (codes into "
           "BAD_LINE_REASONS).")
      .def_property_readonly("format", &PyLogParser::format)
      .def_property_readonly("fields", &PyLogParser::fields);
  m.def(
      "parse_log_lines",
      [](const py::buffer& block, const std::string& format, std::vector<std::string> fields,
         const std::optional<std::string>& pattern, bool strip_query, std::int64_t max_line_bytes,
         bool replace_invalid_utf8) {
        return PyLogParser(format, std::move(fields), pattern, strip_query, max_line_bytes, replace_invalid_utf8)
            .parse(block);
      },
      py::arg("block"), py::arg("format"), py::arg("fields"), py::arg("pattern") = py::none(),
      py::arg("strip_query") = false, py::arg("max_line_bytes") = std::int64_t{1} << 20,
      py::arg("replace_invalid_utf8") = false, "LogParser(format, fields, ...).parse(block) in one call.");
}
