// Private releases: PMG, DPSS, noisy Count-Min/CountSketch, the error-envelope wrapper, and the
// threshold formulas (exposed so tests can check them against hand-computed values). The Python
// layer (dpsketch/release.py, dpsketch/private.py) adds budget tracking and the Release object.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "dpsketch/release/calibration.hpp"
#include "dpsketch/release/counter_release.hpp"
#include "dpsketch/release/private_sketch.hpp"
#include "dpsketch/release/sketch_heavy_hitters.hpp"
#include "keys.hpp"

namespace py = pybind11;
using namespace dpsketch;
using namespace dpsketch::release;
using namespace dpsketch::bindings;

namespace {

// (items, threshold, threshold_inclusive, metadata) -- keys appear only for items that passed.
template <class Key, class Value>
py::tuple to_python(const Release<Key, Value>& r) {
  py::list items(r.items.size());
  for (std::size_t i = 0; i < r.items.size(); ++i) items[i] = py::make_tuple(to_py(r.items[i].first), r.items[i].second);
  py::dict meta;
  for (const auto& [k, v] : r.metadata) meta[py::str(k)] = v;
  return py::make_tuple(items, r.threshold, r.threshold_inclusive, meta);
}

template <class Key>
void bind_counter_releases(py::module_& m) {
  // (eps, delta): the mechanism's share (calibrate()); length: from Length.noisy / fixed / unused.
  m.def("pmg", [](const MisraGries<Key>& mg, double eps, double delta, std::optional<std::uint64_t> k,
                  const Length& length, noise::SecureRng& rng) {
    return to_python(pmg(mg, eps, delta, k, length, rng));
  }, py::arg("summary"), py::arg("epsilon"), py::arg("delta"), py::arg("k"), py::arg("length"), py::arg("rng"));
  m.def("dpss", [](const SpaceSaving<Key>& ss, double eps, double delta, std::uint64_t k,
                   const Length& length, noise::SecureRng& rng) {
    return to_python(dpss(ss, eps, delta, k, length, rng));
  }, py::arg("summary"), py::arg("epsilon"), py::arg("delta"), py::arg("k"), py::arg("length"), py::arg("rng"));
}

template <class T>
void bind_private_sketch(py::module_& m, const char* name) {
  py::class_<T> c(m, name);
  c.def(py::init([](std::uint64_t width, std::uint64_t depth, std::uint64_t hash_seed, const std::string& kind,
                    std::uint64_t num, std::uint64_t den, std::int64_t shift, bool f2_row, noise::SecureRng& rng,
                    const std::string& neighbours) {
          NoiseSpec spec{kind == "laplace" ? NoiseKind::laplace : NoiseKind::gaussian, noise::Rational{num, den}, shift};
          if (kind != "laplace" && kind != "gaussian") throw std::invalid_argument("noise kind must be laplace or gaussian");
          if (neighbours != "add_remove" && neighbours != "replace")
            throw std::invalid_argument("neighbours must be 'add_remove' or 'replace'");
          spec.replace_neighbours = neighbours == "replace";
          return T(width, depth, hash_seed, spec, f2_row, rng);
        }),
        py::arg("width"), py::arg("depth"), py::arg("hash_seed"), py::arg("kind"), py::arg("num"), py::arg("den"),
        py::arg("shift"), py::arg("f2_row"), py::arg("rng"), py::arg("neighbours") = "add_remove");
  c.def_property_readonly("neighbours", [](const T& s) { return s.noise_spec().replace_neighbours ? "replace" : "add_remove"; });
  c.def_static("from_sketch", [](const typename T::sketch_type& s, const std::string& kind, std::uint64_t num,
                                 std::uint64_t den, std::int64_t shift, noise::SecureRng& rng,
                                 const std::string& neighbours) {
    if (kind != "laplace" && kind != "gaussian") throw std::invalid_argument("noise kind must be laplace or gaussian");
    if (neighbours != "add_remove" && neighbours != "replace")
      throw std::invalid_argument("neighbours must be 'add_remove' or 'replace'");
    NoiseSpec spec{kind == "laplace" ? NoiseKind::laplace : NoiseKind::gaussian, noise::Rational{num, den}, shift};
    spec.replace_neighbours = neighbours == "replace";
    return T::from_sketch(s, spec, rng);
  }, py::arg("sketch"), py::arg("kind"), py::arg("num"), py::arg("den"), py::arg("shift"), py::arg("rng"),
     py::arg("neighbours") = "add_remove");
  def_keyed<T>(c);
  c.def_property_readonly("width", [](const T& s) { return s.sketch().width(); });
  c.def_property_readonly("depth", [](const T& s) { return s.sketch().depth(); });
  c.def_property_readonly("seed", [](const T& s) { return s.sketch().seed(); });
  c.def_property_readonly("noise_kind", [](const T& s) { return s.noise_spec().kind == NoiseKind::laplace ? "laplace" : "gaussian"; });
  c.def_property_readonly("noise_param", [](const T& s) { return py::make_tuple(s.noise_spec().param.num, s.noise_spec().param.den); });
  c.def_property_readonly("shift", [](const T& s) { return s.noise_spec().shift; });
  // docs/privacy.md §Publishing: the published form drops n (which then reads 0) and is read-only.
  c.def("withhold_length", &T::withhold_length);
  c.def_property_readonly("length_withheld", &T::length_withheld);
  def_sketch_queries<T>(c, [](const T& s) -> const auto& { return s.sketch(); });
}

template <class T>
void bind_envelope(py::module_& m, const char* name) {
  py::class_<T> c(m, name);
  c.def(py::init([](std::uint64_t k, std::uint64_t capacity, std::uint64_t width, std::uint64_t depth, double epsilon,
                    double delta, std::uint64_t max_stream_length, std::uint64_t hash_seed, noise::SecureRng& rng) {
          EnvelopeParams p;
          p.k = k; p.capacity = capacity; p.width = width; p.depth = depth;
          p.epsilon = epsilon; p.delta = delta; p.max_stream_length = max_stream_length;
          return T(p, hash_seed, rng);
        }),
        py::arg("k"), py::arg("capacity"), py::arg("width"), py::arg("depth"), py::arg("epsilon"), py::arg("delta"),
        py::arg("max_stream_length"), py::arg("hash_seed"), py::arg("rng"));
  using Key = typename T::key_type;
  if constexpr (std::is_same_v<Key, std::int64_t>) {
    c.def("update", [](T& s, std::int64_t x) { s.update(x); });
    c.def("update_many", [](T& s, const IntArray& a) { update_ints(s, a); });
    c.def("estimate", [](const T& s, std::int64_t x) { return s.estimate(x); });
  } else {
    c.def("update", [](T& s, std::string_view x) { s.update(x); });
    const auto room = [](T& s) { return [&s](std::size_t k) { s.check_room(k); }; };  // all-or-nothing batches
    c.def("update_many", [room](T& s, const py::object& items) {
      for_each_str(items, [&](std::string_view x) { s.update(x); }, room(s));
    });
    c.def("update_many_utf8", [room](T& s, const py::array_t<std::uint8_t, py::array::c_style>& data, const py::array& off) {
      for_each_utf8_offsets(data, off, [&](std::string_view x) { s.update(x); }, room(s));
    });
    c.def("estimate", [](const T& s, std::string_view x) { return s.estimate(x); });
  }
  c.def_property_readonly("n", &T::n);
  c.def_property_readonly("candidates", &T::candidates);
  c.def_property_readonly("width", [](const T& s) { return s.params().width; });
  c.def_property_readonly("depth", [](const T& s) { return s.params().depth; });
  c.def("memory_bytes", &T::memory_bytes);
  // The noisy oracle's cells (d x w) and its F2 row (empty for Count-Min): the data holder's view
  // of the ε-DP state every released value is computed from (the audit reads it).
  c.def("oracle_cells", [](const T& s) {
    const auto& sk = s.oracle().sketch();
    py::array_t<std::int64_t> a({static_cast<py::ssize_t>(sk.depth()), static_cast<py::ssize_t>(sk.width())});
    std::copy(sk.cells().begin(), sk.cells().end(), a.mutable_data());
    const auto& f2 = s.oracle().f2_cells();
    py::array_t<std::int64_t> b(static_cast<py::ssize_t>(f2.size()));
    std::copy(f2.begin(), f2.end(), b.mutable_data());
    return py::make_tuple(a, b);
  });
  c.def("release", [](const T& s, const Length& length) { return to_python(s.release(length)); }, py::arg("length"));
}

}  // namespace

void bind_calibration(py::module_& m) {
  py::class_<Length> L(m, "Length", "the stream length as a release uses it (docs/privacy.md §Stream length)");
  L.def_static("unused", &Length::unused);
  L.def_static("fixed", &Length::fixed, py::arg("n"));
  L.def_static("noisy", [](std::uint64_t n, double eps_n, double delta_n, noise::SecureRng& rng) {
    return Length::noisy(n, eps_n, delta_n, rng);
  }, py::arg("n"), py::arg("epsilon"), py::arg("delta"), py::arg("rng"));
  L.def_static("from_bounds", &Length::from_bounds, py::arg("n_hat"), py::arg("t"), py::arg("epsilon"), py::arg("delta"));
  L.def_property_readonly("kind", &Length::name);
  L.def_property_readonly("n_hat", [](const Length& x) { return static_cast<double>(x.n_hat); });
  L.def_property_readonly("n_lo", [](const Length& x) { return static_cast<double>(x.n_lo); });
  L.def_property_readonly("n_up", [](const Length& x) { return static_cast<double>(x.n_up); });
  L.def_property_readonly("t", [](const Length& x) { return x.t_n; });
  L.def_property_readonly("epsilon", [](const Length& x) { return x.eps_n; });
  L.def_property_readonly("delta", [](const Length& x) { return x.delta_n; });
  L.def("__repr__", [](const Length& x) { return std::string("<Length ") + x.name() + ">"; });  // no values: n̂ is for the release

  m.def("calibrate", [](double eps, double delta, const std::string& need, bool public_length, double length_eps,
                        double length_delta) {
    LengthNeed nd;
    if (need == "none") nd = LengthNeed::none;
    else if (need == "estimate") nd = LengthNeed::estimate;
    else if (need == "bounds") nd = LengthNeed::bounds;
    else throw std::invalid_argument("need must be 'none', 'estimate' or 'bounds'");
    const Calibration c = calibrate(eps, delta, nd, public_length, length_eps, length_delta);
    py::dict d;
    d["epsilon_mechanism"] = c.eps_core;
    d["delta_mechanism"] = c.delta_core;
    d["length_epsilon"] = c.eps_n;
    d["length_delta"] = c.delta_n;
    d["public_length"] = c.public_length;
    d["neighbours"] = c.neighbours();
    d["epsilon_total"] = c.epsilon_total();
    d["delta_total"] = c.delta_total();
    d["length"] = nd == LengthNeed::none ? "unused" : c.public_length ? "public" : "private";
    return d;
  }, py::arg("epsilon"), py::arg("delta"), py::arg("need"), py::arg("public_length") = false,
     py::arg("length_epsilon") = 0.0, py::arg("length_delta") = 0.0);
  m.def("zcdp_epsilon", &zcdp_epsilon, py::arg("rho"), py::arg("delta"));
  m.def("zcdp_rho_for", &zcdp_rho_for, py::arg("epsilon"), py::arg("delta"));
  m.attr("LENGTH_EPSILON_SHARE") = kLengthEpsilonShare;
  m.attr("LENGTH_DELTA_SHARE") = kLengthDeltaShare;
}

void bind_release(py::module_& root) {
  py::module_ m = root.def_submodule("release", "private release mechanisms (docs/algorithms.md §2-§5)");
  bind_calibration(m);
  bind_counter_releases<std::int64_t>(m);
  bind_counter_releases<std::string>(m);
  bind_private_sketch<PrivateSketch<std::int64_t, SketchKind::count_min>>(m, "PrivateCountMinInt");
  bind_private_sketch<PrivateSketch<std::string, SketchKind::count_min>>(m, "PrivateCountMinStr");
  bind_private_sketch<PrivateSketch<std::int64_t, SketchKind::count_sketch>>(m, "PrivateCountSketchInt");
  bind_private_sketch<PrivateSketch<std::string, SketchKind::count_sketch>>(m, "PrivateCountSketchStr");
  bind_envelope<SketchHeavyHitters<std::int64_t, SketchKind::count_min>>(m, "EnvelopeCountMinInt");
  bind_envelope<SketchHeavyHitters<std::string, SketchKind::count_min>>(m, "EnvelopeCountMinStr");
  bind_envelope<SketchHeavyHitters<std::int64_t, SketchKind::count_sketch>>(m, "EnvelopeCountSketchInt");
  bind_envelope<SketchHeavyHitters<std::string, SketchKind::count_sketch>>(m, "EnvelopeCountSketchStr");
  // Threshold formulas (for tests and metadata).
  m.def("pmg_t", [](double e, double d) { return pmg_t(e, d); });
  // §2 PMG release threshold τ = 1 + 2t (docs/mechanisms/pmg.md): keep v_x >= τ.
  m.def("pmg_threshold", [](double e, double d) { return static_cast<double>(pmg_threshold(e, d)); });
  m.def("pmg_unstable_delta", [](double e, std::uint64_t t) { return static_cast<double>(pmg_unstable_delta(e, t)); });
  m.def("dlap_sum_tail_ge_2t", [](double e, std::uint64_t t) { return static_cast<double>(dlap_sum_tail_ge_2t(e, t)); });
  m.def("dpss_gamma", [](double e, double d) { return dpss_gamma(e, d); });
  m.def("length_t", [](double e, double d) { return length_t(e, d); });
  m.def("dpss_threshold", [](double n_lo, double n_up, std::uint64_t k, std::uint64_t kt, std::uint64_t g) {
    return static_cast<double>(dpss_threshold(n_lo, n_up, k, kt, g));
  });
  m.def("envelope_noise", [](std::uint64_t sens, double e, std::uint64_t cells, double dn) {
    return static_cast<double>(envelope_noise(sens, e, cells, dn));
  });
  m.def("envelope_delta", [](double e, double d) { return static_cast<double>(envelope_delta(e, d)); });
  m.def("envelope_min_depth", [](std::uint64_t n_max, std::uint64_t kt, double dc) { return envelope_min_depth(n_max, kt, dc); });
  m.def("gaussian_cm_shift", [](double s2, std::uint64_t d, std::uint64_t w, double b) { return gaussian_cm_shift(s2, d, w, b); });
  m.def("epsilon_used", [](double e) { return static_cast<double>(Epsilon(e).value); });
  m.def("laplace_scale", [](std::uint64_t sens, double e) {
    const auto r = noise::laplace_scale(sens, Epsilon(e).exact);
    return py::make_tuple(r.num, r.den);
  });
  m.def("gaussian_sigma2", [](std::uint64_t sens2, double rho) {
    const auto r = noise::gaussian_sigma2(sens2, noise::dyadic_down(rho, 32));
    return py::make_tuple(r.num, r.den);
  });
}
