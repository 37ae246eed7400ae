// Contribution bounding of the privacy unit (python/dpsketch/privacy_unit.py, docs/privacy.md
// §Privacy unit): dictionary codes and salted value hashes of a column, and the bounding kernel
// over codes (dpsketch/privacy_unit/bound_contributions.hpp). Inputs are validated with the GIL
// held; the loops run with it released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpsketch/privacy_unit/bound_contributions.hpp"
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
}
