// Counter summaries (Misra-Gries, SpaceSaving) and linear sketches (Count-Min, CountSketch), one
// Python class per (structure, key type). The public Python classes in dpsketch/ wrap these and
// fix the key type on first use.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"
#include "keys.hpp"

namespace py = pybind11;
using namespace dpsketch;
using namespace dpsketch::bindings;

namespace {

template <class Key>
py::list items_list(const std::vector<std::pair<Key, std::uint64_t>>& v) {
  py::list out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = py::make_tuple(to_py(v[i].first), v[i].second);
  return out;
}

template <class Key>
void bind_space_saving(py::module_& m, const char* name) {
  using T = SpaceSaving<Key>;
  py::class_<T> c(m, name);
  c.def(py::init<std::uint64_t>(), py::arg("capacity"));
  def_keyed<T>(c);
  c.def_property_readonly("capacity", &T::capacity);
  c.def_property_readonly("size", &T::size);
  c.def("min_count", &T::min_count);
  c.def_property_readonly("merged", &T::merged);
  c.def_property_readonly("floor", &T::floor);
  c.def("merge", &T::merge, py::arg("other"));
  // Structure order: counts ascending, newest first within a count (first = next eviction).
  c.def("items", [](const T& s) { return items_list(s.items()); });
}

template <class Key>
void bind_misra_gries(py::module_& m, const char* name) {
  using T = MisraGries<Key>;
  py::class_<T> c(m, name);
  c.def(py::init<std::uint64_t>(), py::arg("capacity"));
  def_keyed<T>(c);
  c.def_property_readonly("capacity", &T::capacity);
  c.def_property_readonly("decrements", &T::decrements);
  c.def_property_readonly("merged", &T::merged);
  c.def("merge", &T::merge, py::arg("other"));
  // Positive counts ascending (newest first within a count), then zero-count keys in reuse order.
  c.def("items", [](const T& s, bool include_zero) { return items_list(s.items(include_zero)); },
        py::arg("include_zero") = false);
}

template <class T>
void bind_linear(py::module_& m, const char* name) {
  py::class_<T> c(m, name);
  c.def(py::init<std::uint64_t, std::uint64_t, std::uint64_t>(), py::arg("width"), py::arg("depth"), py::arg("seed"));
  def_keyed<T>(c);
  c.def_property_readonly("width", &T::width);
  c.def_property_readonly("depth", &T::depth);
  c.def_property_readonly("seed", &T::seed);
  c.def("merge", &T::merge, py::arg("other"));
  c.def("compatible", &T::compatible, py::arg("other"));
  def_sketch_queries<T>(c, [](const T& s) -> const T& { return s; });
  // positions_many(keys) -> (buckets, signs), each (depth, n) int64: the column each row maps each
  // key to and the sign a unit update adds there (1 for Count-Min), from the sketch's own hashes.
  // Estimates from cells the caller encoded (time/ correlated series) need them.
  using Key = typename T::key_type;
  const auto positions = [](const T& s, const auto& keys, std::size_t n) {
    const auto d = static_cast<py::ssize_t>(s.depth());
    py::array_t<std::int64_t> buckets({d, static_cast<py::ssize_t>(n)});
    py::array_t<std::int64_t> signs({d, static_cast<py::ssize_t>(n)});
    auto* b = buckets.mutable_data();
    auto* g = signs.mutable_data();
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t fp = s.fingerprint(keys[k]);
      for (std::uint32_t i = 0; i < s.depth(); ++i) {
        b[i * n + k] = s.bucket(i, fp);
        g[i * n + k] = s.sign(i, fp);
      }
    }
    return py::make_tuple(buckets, signs);
  };
  if constexpr (std::is_same_v<Key, std::int64_t>) {
    c.def("positions_many", [positions](const T& s, const IntArray& a) {
      if (a.ndim() != 1) throw py::value_error("expected a 1-D int64 array");
      return positions(s, a.data(), static_cast<std::size_t>(a.shape(0)));
    }, py::arg("items"));
  } else {
    c.def("positions_many", [positions](const T& s, const std::vector<std::string>& keys) {
      std::vector<std::string_view> v(keys.begin(), keys.end());
      return positions(s, v, v.size());
    }, py::arg("items"));
  }
}

}  // namespace

void bind_summaries(py::module_& m) {
  m.attr("MAX_CAPACITY") = kMaxCapacity;
  m.attr("MAX_DEPTH") = kMaxDepth;
  m.attr("MAX_CELLS") = kMaxCells;
  m.attr("MAX_STREAM_LENGTH") = kMaxStreamLength;  // common/limits.hpp
  m.attr("MAX_CELL_MASS") = kMaxCellMass;  // sketches/linear_sketch.hpp
  bind_space_saving<std::int64_t>(m, "SpaceSavingInt");
  bind_space_saving<std::string>(m, "SpaceSavingStr");
  bind_misra_gries<std::int64_t>(m, "MisraGriesInt");
  bind_misra_gries<std::string>(m, "MisraGriesStr");
  bind_linear<CountMin<std::int64_t>>(m, "CountMinInt");
  bind_linear<CountMin<std::string>>(m, "CountMinStr");
  bind_linear<CountSketch<std::int64_t>>(m, "CountSketchInt");
  bind_linear<CountSketch<std::string>>(m, "CountSketchStr");
}
