// Dyadic CountSketch, non-private and private (docs/algorithms.md §6). Items arrive as uint64
// numpy arrays (the Python layer, dpsketch/dyadic.py, validates and maps ints/floats into
// [0, 2^L)); batch loops and multi-quantile queries release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/release/private_dyadic.hpp"
#include "keys.hpp"

namespace py = pybind11;
using namespace dpsketch;
using namespace dpsketch::dyadic;
using dpsketch::bindings::view_of;

namespace {

using U64Array = py::array_t<std::uint64_t, py::array::c_style>;
using I64Array = py::array_t<std::int64_t, py::array::c_style>;
using F64Array = py::array_t<double, py::array::c_style>;

// S: DyadicCountSketch or PrivateDyadicCountSketch (which refuses once its length is withheld).
template <class S>
void update_batch(S& s, const U64Array& items, const std::optional<I64Array>& counts) {
  if (items.ndim() != 1) throw py::value_error("items must be a 1-D array");
  const auto m = static_cast<std::size_t>(items.shape(0));
  const std::int64_t* c = nullptr;
  if (counts) {
    if (counts->ndim() != 1 || static_cast<std::size_t>(counts->shape(0)) != m)
      throw py::value_error("counts must be a 1-D int64 array of the same length as items");
    c = counts->data();
  }
  const std::uint64_t* p = items.data();
  py::gil_scoped_release nogil;
  s.update_many(p, c, m);
}

// Query methods shared by both classes; `get(obj)` returns the DyadicCountSketch inside.
template <class T, class Cls, class Get>
void def_queries(Cls& c, Get get) {
  c.def_property_readonly("bits", [get](const T& o) { return get(o).bits(); });
  c.def_property_readonly("width", [get](const T& o) { return get(o).width(); });
  c.def_property_readonly("depth", [get](const T& o) { return get(o).depth(); });
  c.def_property_readonly("exact_levels", [get](const T& o) { return get(o).exact_levels(); });
  c.def_property_readonly("seed", [get](const T& o) { return get(o).seed(); });
  c.def_property_readonly("n", [get](const T& o) { return get(o).n(); });
  c.def("node", [get](const T& o, std::uint32_t level, std::uint64_t prefix) {
    const auto& s = get(o);
    if (level < 1 || level > s.bits()) throw py::value_error("level must be in [1, universe_bits]");
    if (level < 64 && prefix >= (std::uint64_t{1} << level)) throw py::value_error("prefix out of range for this level");
    return s.node(level, prefix);
  });
  c.def("rank", [get](const T& o, std::uint64_t x) { return get(o).rank(x); });
  c.def("total", [get](const T& o) { return get(o).total(); });
  c.def("ranks", [get](const T& o, const U64Array& xs) {
    const auto& s = get(o);
    if (xs.ndim() != 1) throw py::value_error("expected a 1-D array");
    const auto m = xs.shape(0);
    F64Array out(m);
    const std::uint64_t* p = xs.data();
    double* r = out.mutable_data();
    for (py::ssize_t i = 0; i < m; ++i) s.check_item(p[i]);
    py::gil_scoped_release nogil;
    for (py::ssize_t i = 0; i < m; ++i) r[i] = s.rank(p[i]);
    return out;
  });
  c.def("quantiles", [get](const T& o, const F64Array& targets) {
    const auto& s = get(o);
    if (targets.ndim() != 1) throw py::value_error("expected a 1-D array");
    const auto m = targets.shape(0);
    U64Array out(m);
    const double* t = targets.data();
    std::uint64_t* q = out.mutable_data();
    py::gil_scoped_release nogil;
    for (py::ssize_t i = 0; i < m; ++i) q[i] = s.quantile(t[i]);
    return out;
  });
  c.def("heavy_hitters", [get](const T& o, double threshold, std::uint64_t max_nodes) {
    return get(o).heavy_hitters(threshold, max_nodes);
  });
  c.def("level_cells", [get](const T& o, std::uint32_t level) {
    const auto& s = get(o);
    if (level < 1 || level > s.bits()) throw py::value_error("level must be in [1, universe_bits]");
    const auto size = static_cast<py::ssize_t>(s.level_size(level));
    I64Array a(size);
    std::copy_n(s.cells().data() + s.level_offset(level), size, a.mutable_data());
    if (level > s.exact_levels()) a.resize({static_cast<py::ssize_t>(s.depth()), static_cast<py::ssize_t>(s.width())});
    return a;
  });
  c.def_property_readonly("gamma", [get](const T& o) { return get(o).meta().gamma; });
  c.def_property_readonly("bounds", [get](const T& o) -> py::object {
    const auto& m = get(o).meta();
    if (!m.has_bounds) return py::none();
    return py::make_tuple(m.lo, m.hi);
  });
  c.def("memory_bytes", [](const T& o) { return o.memory_bytes(); });
  c.def("to_bytes", [](const T& o) { return py::bytes(o.serialize()); });
  dpsketch::bindings::def_release_state<T>(c);
}

template <class T, class Get>
void def_set_meta(py::class_<T>& c, Get get) {
  c.def("set_meta", [get](T& o, double gamma, std::optional<std::pair<double, double>> bounds) {
    DyadicCountSketch::Meta m;
    m.gamma = gamma;
    if (bounds) {
      m.has_bounds = true;
      m.lo = bounds->first;
      m.hi = bounds->second;
    }
    get(o).set_meta(m);
  });
}

DyadicNoise make_noise(const std::string& kind, const std::string& allocation, const std::string& neighbours,
                       const std::vector<std::pair<std::uint64_t, std::uint64_t>>& params) {
  DyadicNoise spec;
  if (kind == "laplace") spec.kind = release::NoiseKind::laplace;
  else if (kind == "gaussian") spec.kind = release::NoiseKind::gaussian;
  else throw py::value_error("noise kind must be 'laplace' or 'gaussian'");
  if (allocation == "joint") spec.allocation = Allocation::joint;
  else if (allocation == "zhao") spec.allocation = Allocation::zhao;
  else throw py::value_error("noise_allocation must be 'joint' or 'zhao'");
  if (neighbours == "add_remove") spec.neighbours = Neighbours::add_remove;
  else if (neighbours == "replace") spec.neighbours = Neighbours::replace;
  else throw py::value_error("neighbours must be 'add_remove' or 'replace'");
  for (const auto& [num, den] : params) spec.level_params.push_back(noise::Rational{num, den});
  return spec;
}

}  // namespace

void bind_dyadic(py::module_& root) {
  py::module_ m = root.def_submodule("dyadic", "dyadic CountSketch hierarchies (docs/algorithms.md §6)");
  m.def("zhao_parameters", [](std::uint32_t bits, double gamma) {
    std::uint64_t w = 0, d = 0;
    zhao_parameters(bits, gamma, w, d);
    return py::make_tuple(w, d);
  });
  m.def("exact_levels", [](std::uint64_t bits, std::uint64_t width, std::uint64_t depth) {
    return make_shape(bits, width, depth).exact;
  });
  m.attr("MAX_MASS") = kMaxMass;

  using D = DyadicCountSketch;
  py::class_<D> d(m, "DyadicCountSketch");
  d.def(py::init<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>(), py::arg("bits"), py::arg("width"),
        py::arg("depth"), py::arg("seed"));
  d.def("update", [](D& s, std::uint64_t x, std::int64_t c) { s.update(x, c); }, py::arg("item"), py::arg("count") = 1);
  d.def("update_many", &update_batch<D>, py::arg("items"), py::arg("counts") = py::none());
  // The same cells as update_many(items), fed as distinct items with counts (skewed batches).
  d.def("update_many_aggregated", [](D& s, const U64Array& items) {
    if (items.ndim() != 1) throw py::value_error("items must be a 1-D array");
    const std::uint64_t* p = items.data();
    const auto m = static_cast<std::size_t>(items.shape(0));
    py::gil_scoped_release nogil;
    s.update_many_aggregated(p, m);
  }, py::arg("items"));
  d.def("merge", &D::merge);
  d.def("compatible", &D::compatible);
  d.def_property_readonly("mass", &D::mass);
  d.def_static("from_bytes", [](const py::bytes& b) { return D::deserialize(view_of(b)); });
  def_queries<D>(d, [](const D& s) -> const D& { return s; });
  def_set_meta(d, [](D& s) -> D& { return s; });

  using P = PrivateDyadicCountSketch;
  py::class_<P> p(m, "PrivateDyadicCountSketch");
  p.def(py::init([](std::uint64_t bits, std::uint64_t width, std::uint64_t depth, std::uint64_t hash_seed,
                    const std::string& kind, const std::string& allocation, const std::string& neighbours,
                    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& params, noise::SecureRng& rng) {
          return P(bits, width, depth, hash_seed, make_noise(kind, allocation, neighbours, params), rng);
        }),
        py::arg("bits"), py::arg("width"), py::arg("depth"), py::arg("hash_seed"), py::arg("kind"),
        py::arg("allocation"), py::arg("neighbours"), py::arg("params"), py::arg("rng"));
  p.def_static("from_sketch", [](const D& s, const std::string& kind, const std::string& allocation,
                                 const std::string& neighbours,
                                 const std::vector<std::pair<std::uint64_t, std::uint64_t>>& params,
                                 noise::SecureRng& rng) {
    return P(s, make_noise(kind, allocation, neighbours, params), rng);
  });
  p.def("update", [](P& s, std::uint64_t x, std::int64_t c) { s.update(x, c); }, py::arg("item"),
        py::arg("count") = 1);
  p.def("update_many", &update_batch<P>, py::arg("items"), py::arg("counts") = py::none());
  // docs/privacy.md §Publishing: the published form drops n and the gross mass; n reads 0 then.
  p.def("withhold_length", &P::withhold_length);
  p.def_property_readonly("length_withheld", &P::length_withheld);
  p.def_property_readonly("noise_kind", [](const P& s) {
    return s.noise_spec().kind == release::NoiseKind::laplace ? "laplace" : "gaussian";
  });
  p.def_property_readonly("allocation", [](const P& s) {
    return s.noise_spec().allocation == Allocation::joint ? "joint" : "zhao";
  });
  p.def_property_readonly("neighbours", [](const P& s) {
    return s.noise_spec().neighbours == Neighbours::add_remove ? "add_remove" : "replace";
  });
  p.def_property_readonly("level_params", [](const P& s) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const auto& r : s.noise_spec().level_params) out.emplace_back(r.num, r.den);
    return out;
  });
  p.def_static("from_bytes", [](const py::bytes& b) { return P::deserialize(view_of(b)); });
  def_queries<P>(p, [](const P& s) -> const D& { return s.sketch(); });
  def_set_meta(p, [](P& s) -> D& { return s.sketch(); });
}
