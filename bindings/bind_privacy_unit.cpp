// Contribution bounding of the privacy unit (python/dpsketch/privacy_unit.py, docs/privacy.md
// §Privacy unit): dictionary codes and salted value hashes of a column, and the bounding kernel
// over codes (dpsketch/privacy_unit/bound_contributions.hpp). Inputs are validated with the GIL
// held; the loops run with it released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpsketch/privacy_unit/bound_contributions.hpp"
#include "dpsketch/privacy_unit/column_codes.hpp"
#include "dpsketch/privacy_unit/pair_coder.hpp"
#include "keys.hpp"

namespace py = pybind11;
using namespace dpsketch;
using namespace dpsketch::privacy_unit;
using dpsketch::bindings::IntArray;

namespace {

using HashArray = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>;

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// Codes are int32 while every row number fits (so does every code), else int64.
bool narrow_codes(std::size_t n) { return n <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()); }

// (codes, distinct values, their salted hashes) of an int64 column; codes in order of first appearance.
py::tuple encode_ints(const IntArray& values, std::uint64_t salt) {
  if (values.ndim() != 1) throw py::value_error("expected a 1-D int64 array");
  const auto n = static_cast<std::size_t>(values.shape(0));
  const std::int64_t* p = values.data();
  IntCodes codes(salt);
  py::array out;
  if (narrow_codes(n)) {
    py::array_t<std::int32_t> o(static_cast<py::ssize_t>(n));
    auto* q = o.mutable_data();
    {
      py::gil_scoped_release nogil;
      codes.encode(p, n, q);
    }
    out = o;
  } else {
    py::array_t<std::int64_t> o(static_cast<py::ssize_t>(n));
    auto* q = o.mutable_data();
    {
      py::gil_scoped_release nogil;
      codes.encode(p, n, q);
    }
    out = o;
  }
  return py::make_tuple(out, to_array(codes.values()), to_array(codes.hashes()));
}

// (codes, first row of each distinct value, their salted hashes) of a str column: a numpy 'U' or
// object array of str, or a sequence of str; each value is hashed as its UTF-8 bytes.
py::tuple encode_strs(const py::object& items, std::uint64_t salt) {
  const auto n = static_cast<std::size_t>(py::len(items));
  BytesCodes codes(salt);
  std::vector<std::int64_t> first;
  // Values are copied into a block buffer (a 'U' array's UTF-8 views do not outlive their call)
  // and coded a block at a time.
  auto run = [&](auto* q) {
    constexpr std::size_t kBlock = BytesCodes::kBlock;
    std::string buf;
    std::size_t ends[kBlock];
    std::string_view views[kBlock];
    std::size_t count = 0, done = 0;
    auto flush = [&] {
      for (std::size_t j = 0, begin = 0; j < count; begin = ends[j], ++j) views[j] = std::string_view(buf).substr(begin, ends[j] - begin);
      codes.encode_block(views, count, q + done, [&](std::size_t j) { first.push_back(static_cast<std::int64_t>(done + j)); });
      done += count;
      count = 0;
      buf.clear();
    };
    bindings::for_each_str(items, [&](std::string_view s) {
      if (done + count >= n) throw ParameterError("the column changed length while it was read");
      buf.append(s.data(), s.size());
      ends[count++] = buf.size();
      if (count == kBlock) flush();
    });
    flush();
    if (done != n) throw ParameterError("the column changed length while it was read");
  };
  py::array out;
  if (narrow_codes(n)) {
    py::array_t<std::int32_t> o(static_cast<py::ssize_t>(n));
    run(o.mutable_data());
    out = o;
  } else {
    py::array_t<std::int64_t> o(static_cast<py::ssize_t>(n));
    run(o.mutable_data());
    out = o;
  }
  return py::make_tuple(out, to_array(first), to_array(codes.hashes()));
}

// Calls f(pointer) with a 1-D int32 or int64 array's C-contiguous data.
template <class F>
auto with_codes(const py::array& a, const char* name, F&& f) {
  if (a.ndim() != 1) throw py::value_error(std::string(name) + " must be a 1-D array");
  if (a.dtype().kind() == 'i' && a.itemsize() == 4)
    return f(py::array_t<std::int32_t, py::array::c_style>::ensure(a));
  if (a.dtype().kind() == 'i' && a.itemsize() == 8)
    return f(py::array_t<std::int64_t, py::array::c_style>::ensure(a));
  throw py::type_error(std::string(name) + " must be an int32 or int64 array of dictionary codes");
}

py::tuple bound_counts_py(const py::array& unit_codes, const py::array& key_codes, const HashArray& unit_hashes,
                          const HashArray& key_hashes, std::uint64_t m, std::uint64_t c,
                          const std::optional<HashArray>& key_rank) {
  if (unit_codes.ndim() != 1 || key_codes.ndim() != 1 || unit_codes.shape(0) != key_codes.shape(0))
    throw ParameterError("unit and key codes must be 1-D arrays of the same length (one of each per row)");
  if (unit_hashes.ndim() != 1 || key_hashes.ndim() != 1) throw ParameterError("hashes must be 1-D arrays");
  if (key_rank && (key_rank->ndim() != 1 || key_rank->shape(0) != key_hashes.shape(0)))
    throw ParameterError("key_rank must give one rank per key code");
  const auto n = static_cast<std::size_t>(unit_codes.shape(0));
  const auto n_units = static_cast<std::size_t>(unit_hashes.shape(0));
  const auto n_keys = static_cast<std::size_t>(key_hashes.shape(0));
  py::array_t<std::int64_t> counts(static_cast<py::ssize_t>(n_keys));
  std::int64_t* out = counts.mutable_data();
  const std::uint64_t* hu = unit_hashes.data();
  const std::uint64_t* hk = key_hashes.data();
  const std::uint64_t* rank = key_rank ? key_rank->data() : nullptr;
  const bool tie = with_codes(unit_codes, "unit codes", [&](const auto& u) {
    return with_codes(key_codes, "key codes", [&](const auto& k) {
      const auto* up = u.data();
      const auto* kp = k.data();
      py::gil_scoped_release nogil;
      return bound_counts(up, kp, n, hu, n_units, hk, n_keys, m, c, rank, out);
    });
  });
  return py::make_tuple(counts, tie);
}

// One batch of a column, read with the GIL held: an int64 array, an Arrow (large_)string layout
// given as (offsets: int32 or int64 array of n + 1, data: uint8 array), or any str sequence of
// for_each_str (copied into the same layout as UTF-8). view points into the arrays held here.
struct Batch {
  ColumnBatch view;
  std::vector<py::array> held;  // the arrays the pointers point into
  std::string copied;
  std::vector<std::int64_t> copied_offsets;
};

void read_batch(const py::object& b, const char* name, Batch& out) {
  ColumnBatch& v = out.view;
  if (py::isinstance<py::tuple>(b)) {
    const auto t = py::reinterpret_borrow<py::tuple>(b);
    if (t.size() != 2) throw py::value_error(std::string(name) + ": expected (offsets, data) of an Arrow string array");
    const auto off = py::reinterpret_borrow<py::array>(t[0]);
    const auto data = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(t[1]);
    if (!py::isinstance<py::array>(t[0]) || !data || off.ndim() != 1 || data.ndim() != 1 || off.shape(0) < 1)
      throw py::value_error(std::string(name) + ": offsets and data must be 1-D arrays, offsets of length n + 1");
    v.kind = ColumnCodes::Kind::bytes;
    v.n = static_cast<std::size_t>(off.shape(0) - 1);
    v.data = reinterpret_cast<const char*>(data.data());
    v.data_size = static_cast<std::size_t>(data.shape(0));
    out.held.push_back(data);
    if (off.dtype().kind() == 'i' && off.itemsize() == 4) {
      const auto o = py::array_t<std::int32_t, py::array::c_style>::ensure(off);
      v.offsets32 = o.data();
      out.held.push_back(o);
    } else if (off.dtype().kind() == 'i' && off.itemsize() == 8) {
      const auto o = py::array_t<std::int64_t, py::array::c_style>::ensure(off);
      v.offsets64 = o.data();
      out.held.push_back(o);
    } else {
      throw py::type_error(std::string(name) + ": string offsets must be int32 or int64");
    }
    return;
  }
  if (py::isinstance<py::array>(b) && py::reinterpret_borrow<py::array>(b).dtype().kind() == 'i') {
    const auto a = py::reinterpret_borrow<py::array>(b);
    if (a.itemsize() != 8 || a.ndim() != 1) throw py::type_error(std::string(name) + ": int batches must be 1-D int64 arrays");
    const auto ints = IntArray::ensure(a);
    v.kind = ColumnCodes::Kind::ints;
    v.n = static_cast<std::size_t>(ints.shape(0));
    v.ints = ints.data();
    out.held.push_back(ints);
    return;
  }
  v.kind = ColumnCodes::Kind::bytes;
  out.copied_offsets.push_back(0);
  bindings::for_each_str(b, [&](std::string_view s) {
    out.copied.append(s.data(), s.size());
    out.copied_offsets.push_back(static_cast<std::int64_t>(out.copied.size()));
  });
  v.n = out.copied_offsets.size() - 1;
  v.offsets64 = out.copied_offsets.data();
  v.data = out.copied.data();
  v.data_size = out.copied.size();
}

// The Python face of dpsketch::privacy_unit::PairCoder (privacy_unit/pair_coder.hpp): batches are
// read with the GIL held, then coded with it released.
class PyPairCoder {
 public:
  PyPairCoder(std::uint64_t key_salt, std::uint64_t unit_salt) : coder_(key_salt, unit_salt) {}

  // Codes one batch of rows, the GIL released.
  void add(const py::object& keys, const py::object& ids) {
    Batch k, u;
    read_batch(keys, "keys", k);
    read_batch(ids, "privacy_id", u);
    py::gil_scoped_release nogil;
    coder_.add(k.view, u.view);
  }

  // One column's half of add: the two columns may be coded in two threads at once (one thread per
  // column), each column's batches in row order; bound() checks that they hold the same rows.
  void add_keys(const py::object& keys) {
    Batch b;
    read_batch(keys, "keys", b);
    py::gil_scoped_release nogil;
    coder_.add_keys(b.view);
  }
  void add_ids(const py::object& ids) {
    Batch b;
    read_batch(ids, "privacy_id", b);
    py::gil_scoped_release nogil;
    coder_.add_ids(b.view);
  }

  py::tuple bound(std::uint64_t m, std::uint64_t c, const std::optional<HashArray>& key_rank) {
    if (key_rank && key_rank->ndim() != 1) throw ParameterError("key_rank must give one rank per key code");
    coder_.check_rank(key_rank.has_value(), key_rank ? static_cast<std::size_t>(key_rank->shape(0)) : 0);
    py::array_t<std::int64_t> counts(static_cast<py::ssize_t>(coder_.distinct_keys()));
    std::int64_t* out = counts.mutable_data();
    const std::uint64_t* rank = key_rank ? key_rank->data() : nullptr;
    bool tie;
    {
      py::gil_scoped_release nogil;
      tie = coder_.bound(m, c, rank, out);
    }
    return py::make_tuple(counts, tie);
  }

  // The codes of the keys with a positive count (counts as bound() returns them), in value order.
  py::array_t<std::int64_t> positive_codes(const IntArray& counts) const {
    if (counts.ndim() != 1) throw ParameterError("counts must give one count per key code");
    std::vector<std::uint32_t> codes;
    {
      const std::int64_t* p = counts.data();
      const auto n = static_cast<std::size_t>(counts.shape(0));
      py::gil_scoped_release nogil;
      codes = coder_.positive_codes(p, n);
    }
    py::array_t<std::int64_t> out(static_cast<py::ssize_t>(codes.size()));
    std::copy(codes.begin(), codes.end(), out.mutable_data());
    return out;
  }

  // The key values of the given codes as a numpy array: int64, or fixed-width str ('U', as
  // numpy.array(list of str) gives) decoded from the UTF-8 bytes here; None when a value is not
  // valid UTF-8 (then key_values' strict decoding names the error).
  py::object key_array(const IntArray& codes) const {
    check_codes(codes);
    const auto n = static_cast<std::size_t>(codes.shape(0));
    const std::int64_t* p = codes.data();
    if (coder_.key_kind() == ColumnCodes::Kind::ints) return key_values(codes);
    std::vector<std::uint32_t> points;  // every value's code points, then each value's count
    std::vector<std::size_t> ends;
    bool valid;
    {
      py::gil_scoped_release nogil;
      valid = coder_.key_code_points(p, n, points, ends);
    }
    if (!valid) return py::none();
    std::size_t width = 1;
    for (std::size_t i = 0; i < n; ++i) width = std::max(width, ends[i] - (i ? ends[i - 1] : 0));
    const py::dtype str_type = py::dtype::from_args(py::str("<U" + std::to_string(width)));
    py::array out(str_type, std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
    auto* q = static_cast<std::uint32_t*>(out.mutable_data());
    {
      py::gil_scoped_release nogil;
      std::fill(q, q + n * width, 0u);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t begin = i ? ends[i - 1] : 0;
        std::copy(points.begin() + static_cast<std::ptrdiff_t>(begin), points.begin() + static_cast<std::ptrdiff_t>(ends[i]),
                  q + i * width);
      }
    }
    return std::move(out);
  }

  // The key values of the given codes: an int64 array, or a list of str (decoded from UTF-8).
  py::object key_values(const IntArray& codes) const {
    check_codes(codes);
    const auto n = static_cast<std::size_t>(codes.shape(0));
    const std::int64_t* p = codes.data();
    const ColumnCodes& keys = coder_.keys();
    if (keys.kind() == ColumnCodes::Kind::ints) {
      py::array_t<std::int64_t> out(static_cast<py::ssize_t>(n));
      auto* q = out.mutable_data();
      for (std::size_t i = 0; i < n; ++i) q[i] = keys.int_value(static_cast<std::uint32_t>(p[i]));
      return std::move(out);
    }
    py::list out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view s = keys.bytes_value(static_cast<std::uint32_t>(p[i]));
      PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
      if (!o) throw py::error_already_set();
      PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), o);
    }
    return std::move(out);
  }

  void check_codes(const IntArray& codes) const {
    if (codes.ndim() != 1) throw py::value_error("codes must be a 1-D int64 array");
    coder_.check_codes(codes.data(), static_cast<std::size_t>(codes.shape(0)));
  }

  py::object key_kind() const {
    switch (coder_.key_kind()) {
      case ColumnCodes::Kind::ints: return py::str("int");
      case ColumnCodes::Kind::bytes: return py::str("str");
      default: return py::none();
    }
  }
  std::size_t rows() const noexcept { return coder_.rows(); }
  std::size_t distinct_keys() const noexcept { return coder_.distinct_keys(); }

 private:
  PairCoder coder_;
};

}  // namespace

void bind_privacy_unit(py::module_& root) {
  py::module_ m = root.def_submodule(
      "privacy_unit", "contribution bounding of the privacy unit (docs/privacy.md §Privacy unit)");
  m.def("encode_ints", &encode_ints, py::arg("values"), py::arg("salt"),
        "(codes, distinct values, salted hashes) of an int64 column; codes in order of first appearance.");
  m.def("encode_strs", &encode_strs, py::arg("values"), py::arg("salt"),
        "(codes, first row of each distinct value, salted hashes of its UTF-8 bytes) of a str column.");
  m.def("salted_str_hash", [](std::string_view s, std::uint64_t salt) { return salted_bytes_hash(s, salt); },
        py::arg("value"), py::arg("salt"), "The salted hash encode_strs gives a str (of its UTF-8 bytes).");
  m.def("bound_counts", &bound_counts_py, py::arg("unit_codes"), py::arg("key_codes"), py::arg("unit_hashes"),
        py::arg("key_hashes"), py::arg("max_keys_per_unit"), py::arg("max_rows_per_key"), py::arg("key_rank") = py::none(),
        "(bounded count per key code, tie): per unit the max_keys_per_unit keys with the smallest pair hash, "
        "<= max_rows_per_key rows each; tie is True when a tie of the pair hash was broken by key code where it "
        "decided what a unit kept (rerun with key_rank, each key code's rank in value order).");
  py::class_<PyPairCoder>(m, "PairCoder",
                        "The key and privacy-id columns of contribution bounding, dictionary-coded batch by batch "
                        "(codes and salted hashes as encode_ints / encode_strs give the concatenated columns).")
      .def(py::init<std::uint64_t, std::uint64_t>(), py::arg("key_salt"), py::arg("unit_salt"))
      .def("add", &PyPairCoder::add, py::arg("keys"), py::arg("ids"),
           "Code one batch of rows. Each column's batch: an int64 array, (offsets, data) of an Arrow "
           "(large_)string array, or a sequence of str.")
      .def("bound", &PyPairCoder::bound, py::arg("max_keys_per_unit"), py::arg("max_rows_per_key"),
           py::arg("key_rank") = py::none(), "(bounded count per key code, tie), as bound_counts.")
      .def("positive_codes", &PyPairCoder::positive_codes, py::arg("counts"),
           "The key codes with a positive count, in the order of their values (ints numerically, strs by "
           "code point).")
      .def("key_array", &PyPairCoder::key_array, py::arg("codes"),
           "The key values of these codes as an int64 or 'U' numpy array (None if a value is not UTF-8).")
      .def("key_values", &PyPairCoder::key_values, py::arg("codes"),
           "The key values of these codes: an int64 array or a list of str.")
      .def("add_keys", &PyPairCoder::add_keys, py::arg("keys"), "add's key half (see add_ids).")
      .def("add_ids", &PyPairCoder::add_ids, py::arg("ids"),
           "add's id half: the halves may run in two threads, each column's batches in row order.")
      .def_property_readonly("key_kind", &PyPairCoder::key_kind, "'int', 'str' or None (no batch yet)")
      .def_property_readonly("rows", &PyPairCoder::rows)
      .def_property_readonly("distinct_keys", &PyPairCoder::distinct_keys);
}
