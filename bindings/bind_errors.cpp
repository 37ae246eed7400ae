// The exception types of the C++ core as Python classes under one base, dpsketch.DPSketchError
// (python/dpsketch/errors.py re-exports them). Each also derives from the built-in a caller would
// catch without knowing dpsketch (ValueError, OverflowError, RuntimeError), so the types refine
// what pybind11's default mapping gave.
#include <pybind11/pybind11.h>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/release/private_sketch.hpp"

namespace py = pybind11;
using namespace dpsketch;

namespace {

// The classes are named dpsketch.errors.X (their __module__), where users import them from.
py::handle new_exception(py::module_& m, const char* name, const char* doc, py::handle bases) {
  const std::string full = std::string("dpsketch.errors.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr);
  if (!t) throw py::error_already_set();
  m.add_object(name, py::handle(t));
  return py::handle(t);
}

py::handle with_base(py::handle base, PyObject* builtin) {
  return py::make_tuple(base, py::handle(builtin)).release();
}

}  // namespace

void bind_errors(py::module_& m) {
  static py::handle base = new_exception(m, "DPSketchError", "Base class of every error dpsketch raises.",
                                         py::handle(PyExc_Exception));
  static py::handle parameter = new_exception(m, "ParameterError", "A parameter is out of range or inconsistent.",
                                              with_base(base, PyExc_ValueError));
  static py::handle parameter_type = new_exception(
      m, "ParameterTypeError", "A parameter or a data argument has the wrong type.",
      py::make_tuple(parameter, py::handle(PyExc_TypeError)).release());
  static py::handle corrupt = new_exception(m, "CorruptBytesError",
                                            "Serialized bytes are corrupt, truncated or of another family.",
                                            with_base(base, PyExc_ValueError));
  static py::handle limit = new_exception(m, "StreamLimitError",
                                          "An update would take a summary past its stream limit; nothing changed.",
                                          with_base(base, PyExc_OverflowError));
  static py::handle noise_range = new_exception(m, "NoiseRangeError",
                                                "A noise scale or draw is outside the samplers' exact integer range.",
                                                with_base(base, PyExc_OverflowError));
  static py::handle entropy = new_exception(m, "EntropyError", "The operating system's entropy source failed.",
                                            with_base(base, PyExc_RuntimeError));
  static py::handle withheld = new_exception(m, "ReadOnlyError",
                                             "A published (released) object is read-only.",
                                             with_base(base, PyExc_RuntimeError));
  static py::handle state = new_exception(m, "StateError",
                                          "The object is not in a state that allows the call (for example a batch "
                                          "changed by another thread while it was read).",
                                          with_base(base, PyExc_RuntimeError));
  static py::handle internal = new_exception(m, "InternalError",
                                             "An internal invariant failed: a bug in dpsketch; please report it.",
                                             with_base(base, PyExc_RuntimeError));
  // Tried before pybind11's own mapping, so every exception of the core arrives as a DPSketchError:
  // the specific types first, then the standard ones by the built-in they map to.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DeserializeError& e) {  // before ParameterError: both are invalid_argument
      PyErr_SetString(corrupt.ptr(), e.what());
    } catch (const ParameterError& e) {
      PyErr_SetString(parameter.ptr(), e.what());
    } catch (const StreamLimitError& e) {
      PyErr_SetString(limit.ptr(), e.what());
    } catch (const NoiseRangeError& e) {
      PyErr_SetString(noise_range.ptr(), e.what());
    } catch (const EntropyError& e) {
      PyErr_SetString(entropy.ptr(), e.what());
    } catch (const release::LengthWithheldError& e) {
      PyErr_SetString(withheld.ptr(), e.what());
    } catch (const py::value_error& e) {
      PyErr_SetString(parameter.ptr(), e.what());
    } catch (const py::type_error& e) {
      PyErr_SetString(parameter_type.ptr(), e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(parameter.ptr(), e.what());
    } catch (const std::overflow_error& e) {  // counts beyond the 2^62 mass a summary holds
      PyErr_SetString(limit.ptr(), e.what());
    } catch (const std::logic_error& e) {
      PyErr_SetString(internal.ptr(), e.what());
    } catch (const std::runtime_error& e) {
      PyErr_SetString(state.ptr(), e.what());
    }
  });
}
