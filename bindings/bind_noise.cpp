// Python bindings for the exact noise samplers (docs/algorithms.md §1): dpsketch._core.noise.
//
// Errors: the translator of bind_errors.cpp (ParameterError, ParameterTypeError, NoiseRangeError,
// all dpsketch.DPSketchError). Sampling loops run without the GIL; each generator is then guarded by a
// mutex so that two Python threads sharing one SecureRng can never race on (or replay) its state.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "dpsketch/noise/samplers.hpp"

namespace py = pybind11;
using dpsketch::noise::Rational;
using dpsketch::noise::SecureRng;

namespace {

// Striped locks keyed by generator address (SecureRng itself stays lock-free for C++ callers).
std::mutex& rng_mutex(const SecureRng& rng) {
    static std::array<std::mutex, 64> stripes;
    return stripes[std::hash<const void*>{}(&rng) % stripes.size()];
}

// Python integer (int, numpy integer, anything with __index__) -> uint64, with a message naming
// the argument; floats are rejected with TypeError rather than truncated.
std::uint64_t to_u64(const py::handle& v, const char* name) {
    PyObject* idx = PyNumber_Index(v.ptr());
    if (idx == nullptr) {
        PyErr_Clear();
        throw py::type_error(std::string(name) + " must be an integer");
    }
    const py::object i = py::reinterpret_steal<py::object>(idx);
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow < 0 || (overflow == 0 && s < 0))
        throw py::value_error(std::string(name) + " must be a non-negative integer");
    const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        throw dpsketch::NoiseRangeError(std::string(name) + " must be < 2**64");
    }
    return u;
}

Rational to_rational(const py::object& num, const py::object& den, const char* name) {
    const Rational r{to_u64(num, (std::string(name) + "_num").c_str()),
                     to_u64(den, (std::string(name) + "_den").c_str())};
    if (r.den == 0)
        throw py::value_error(std::string(name) + "_den must be >= 1 (" + name + " = " + name +
                              "_num / " + name + "_den)");
    return r;
}

py::ssize_t check_size(py::ssize_t size) {
    if (size < 0) throw py::value_error("size must be >= 0 (number of samples to draw)");
    return size;
}

// Fill a new 1-D array of `size` elements with draw(rng), GIL released, generator locked.
template <class T, class Draw>
py::array_t<T> sample_array(SecureRng& rng, py::ssize_t size, Draw draw) {
    py::array_t<T> out(check_size(size));
    T* p = out.mutable_data();
    {
        py::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(rng_mutex(rng));
        for (py::ssize_t i = 0; i < size; ++i) p[i] = draw(rng);
    }
    return out;
}

const std::uint8_t* fixed_bytes(const py::bytes& b, std::size_t n, const char* name) {
    char* data = nullptr;
    py::ssize_t len = 0;
    if (PyBytes_AsStringAndSize(b.ptr(), &data, &len) != 0) throw py::error_already_set();
    if (static_cast<std::size_t>(len) != n)
        throw py::value_error(std::string(name) + " must be exactly " + std::to_string(n) +
                              " bytes, got " + std::to_string(len));
    return reinterpret_cast<const std::uint8_t*>(data);
}

}  // namespace

void bind_noise(py::module_& m) {
    namespace nz = dpsketch::noise;
    py::module_ noise = m.def_submodule(
        "noise", "Exact integer noise (discrete Laplace / Gaussian, CKS20) from a ChaCha20 CSPRNG.");

    py::class_<SecureRng>(noise, "SecureRng",
                          "ChaCha20 CSPRNG. SecureRng() is keyed from the OS (getrandom); "
                          "SecureRng(seed) is reproducible and NOT secret (experiments only).")
        .def(py::init([](const py::object& seed) {
                 if (seed.is_none()) return std::make_unique<SecureRng>();
                 return std::make_unique<SecureRng>(to_u64(seed, "seed"));
             }),
             py::arg("seed") = py::none())
        .def_property_readonly("seeded", &SecureRng::seeded,
                               "True if built from an explicit seed (reproducible, not secret).")
        .def(
            "next_u64",
            [](SecureRng& rng) {
                std::lock_guard<std::mutex> lock(rng_mutex(rng));
                return rng.next_u64();
            },
            "Next 64 uniformly random bits as an int in [0, 2**64).")
        .def(
            "uniform_below",
            [](SecureRng& rng, const py::object& n) {
                const std::uint64_t nn = to_u64(n, "n");
                if (nn == 0) throw py::value_error("n must be >= 1 (draws from {0, ..., n-1})");
                std::lock_guard<std::mutex> lock(rng_mutex(rng));
                return rng.uniform_below(nn);
            },
            py::arg("n"), "Exactly uniform int in [0, n), 1 <= n < 2**64.")
        .def("__repr__", [](const SecureRng& rng) {
            return std::string("SecureRng(") + (rng.seeded() ? "seeded" : "os-keyed") + ")";
        });

    noise.def(
        "discrete_laplace",
        [](SecureRng& rng, const py::object& num, const py::object& den, py::ssize_t size) {
            const nz::DiscreteLaplace dlap(to_rational(num, den, "scale"));
            return sample_array<std::int64_t>(rng, size, [&](SecureRng& r) { return dlap(r); });
        },
        py::arg("rng"), py::arg("scale_num"), py::arg("scale_den"), py::arg("size"),
        "int64 array of DLap(scale) samples, P(z) ∝ exp(-|z|/scale), scale = scale_num/scale_den.");

    noise.def(
        "discrete_gaussian",
        [](SecureRng& rng, const py::object& num, const py::object& den, py::ssize_t size) {
            const nz::DiscreteGaussian dg(to_rational(num, den, "sigma2"));
            return sample_array<std::int64_t>(rng, size, [&](SecureRng& r) { return dg(r); });
        },
        py::arg("rng"), py::arg("sigma2_num"), py::arg("sigma2_den"), py::arg("size"),
        "int64 array of DGauss(sigma2) samples, P(z) ∝ exp(-z^2/(2 sigma2)), "
        "sigma2 = sigma2_num/sigma2_den.");

    noise.def(
        "bernoulli_exp",
        [](SecureRng& rng, const py::object& num, const py::object& den, py::ssize_t size) {
            const Rational gamma = to_rational(num, den, "gamma");
            return sample_array<bool>(
                rng, size, [&](SecureRng& r) { return nz::bernoulli_exp(r, gamma); });
        },
        py::arg("rng"), py::arg("gamma_num"), py::arg("gamma_den"), py::arg("size"),
        "bool array of Bernoulli(exp(-gamma)) samples, gamma = gamma_num/gamma_den >= 0.");

    noise.def(
        "dyadic_down",
        [](double x, int frac_bits) {
            const Rational r = nz::dyadic_down(x, frac_bits);
            return py::make_tuple(r.num, r.den);
        },
        py::arg("x"), py::arg("frac_bits") = 32,
        "(num, den) in lowest terms: the largest multiple of 2**-frac_bits that is <= x. "
        "For epsilon/rho: rounding down never weakens privacy.");

    noise.def(
        "chacha20_block",
        [](const py::bytes& key, const py::object& counter, const py::bytes& nonce) {
            const std::uint8_t* k = fixed_bytes(key, 32, "key");
            const std::uint8_t* iv = fixed_bytes(nonce, 12, "nonce");
            const std::uint64_t c = to_u64(counter, "counter");
            if (c > 0xFFFFFFFFull) throw py::value_error("counter must be < 2**32");
            const auto block = nz::chacha20_block(k, static_cast<std::uint32_t>(c), iv);
            return py::bytes(reinterpret_cast<const char*>(block.data()), block.size());
        },
        py::arg("key"), py::arg("counter"), py::arg("nonce"),
        "RFC 8439 ChaCha20 block function: 64 keystream bytes (for test vectors).");
}
