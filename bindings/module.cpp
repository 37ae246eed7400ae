// The compiled module dpsketch._core. Each family binds itself in its own translation unit.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_summaries(py::module_& m);
void bind_noise(py::module_& m);
void bind_release(py::module_& m);
void bind_dyadic(py::module_& m);
void bind_fast(py::module_& m);
void bind_privacy_unit(py::module_& m);
void bind_logs(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "dpsketch native core (header-only C++ structures compiled for Python)";
  m.attr("__version__") = DPSKETCH_VERSION;
  bind_errors(m);  // first: every binding below may raise these types
  bind_summaries(m);
  bind_noise(m);
  bind_release(m);
  bind_dyadic(m);
  bind_fast(m);
  bind_privacy_unit(m);
  bind_logs(m);
}
