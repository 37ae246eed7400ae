// split_lines for text input (dpsketch._input): the splitter of dpsketch/io/line_splitter.hpp run
// with the GIL released, its vectors handed to numpy without a copy.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "dpsketch/io/line_splitter.hpp"

namespace py = pybind11;

namespace {

using dpsketch::io::u8;

// A numpy array that owns the vector's memory (no copy).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* q) { delete static_cast<std::vector<T>*>(q); });
  return py::array_t<T>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

// split_lines(block, final, max_line_bytes, on_bad=0, scanned=0, discarding=False, int_keys=False,
//             table_hashes=False) -> dict of dpsketch::io::SplitResult's fields (see there).
py::dict split_lines(const py::array_t<u8, py::array::c_style>& block, bool final, std::int64_t max_line,
                     int on_bad, std::int64_t scanned_in, bool discarding, bool int_keys, bool table_hashes) {
  if (block.ndim() != 1) throw py::value_error("expected a 1-D byte array");
  if (max_line < 1) throw py::value_error("max_line_bytes must be >= 1");
  if (on_bad < dpsketch::io::kError || on_bad > dpsketch::io::kReplace)
    throw py::value_error("on_bad must be 0 (error), 1 (skip) or 2 (replace)");
  const u8* p = block.data();
  const auto size = static_cast<std::size_t>(block.shape(0));
  if (scanned_in < 0 || static_cast<std::size_t>(scanned_in) > size) throw py::value_error("scanned out of range");
  dpsketch::io::SplitOptions opt;
  opt.final = final;
  opt.max_line = static_cast<std::size_t>(max_line);
  opt.on_bad = on_bad;
  opt.scanned = static_cast<std::size_t>(scanned_in);
  opt.discarding = discarding;
  opt.int_keys = int_keys;
  opt.table_hashes = table_hashes;
  dpsketch::io::SplitResult r;
  {
    py::gil_scoped_release nogil;
    r = dpsketch::io::split_lines(p, size, opt);
  }
  py::dict out;
  out["data"] = to_numpy(std::move(r.data));
  out["offsets"] = to_numpy(std::move(r.offsets));
  out["consumed"] = r.consumed;
  out["scanned"] = r.scanned;
  out["discarding"] = r.discarding;
  out["lines"] = r.lines;
  out["bad"] = r.bad;
  out["blank"] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(r.blank.size()), r.blank.data());
  out["error"] = r.error;
  out["error_line"] = r.error_line;
  out["ints"] = to_numpy(std::move(r.ints));
  out["hashes"] = to_numpy(std::move(r.hashes));
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
