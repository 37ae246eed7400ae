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
