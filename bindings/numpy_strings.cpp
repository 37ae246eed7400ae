// StringDTypeBatch (numpy_strings.hpp): numpy's C API for StringDType arrays. Only this file
// includes numpy's headers. The API table is imported lazily, on the first StringDType array,
// so the module still imports with numpy 1.x (which has no StringDType).
#include "numpy_strings.hpp"

#include <pybind11/pybind11.h>

#include <string>

#define PY_ARRAY_UNIQUE_SYMBOL dpsketch_numpy_strings_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/npy_2_compat.h>

namespace dpsketch::bindings {

namespace py = pybind11;

namespace {

void import_numpy_api() {
  if (PyArray_ImportNumPyAPI() < 0) throw py::error_already_set();
}

// Releases the allocator on every exit from the constructor that does not hand it over.
struct AllocatorGuard {
  npy_string_allocator* a;
  ~AllocatorGuard() {
    if (a) NpyString_release_allocator(a);
  }
};

}  // namespace

StringDTypeBatch::StringDTypeBatch(const py::array& arr) : arr_(arr) {
  import_numpy_api();
  if (arr.ndim() != 1) throw py::value_error("expected a 1-D array of str");
  auto* a = reinterpret_cast<PyArrayObject*>(arr.ptr());
  const auto* descr = reinterpret_cast<const PyArray_StringDTypeObject*>(PyArray_DESCR(a));
  const auto n = static_cast<std::size_t>(PyArray_DIM(a, 0));
  const npy_intp stride = PyArray_STRIDE(a, 0);
  const char* base = static_cast<const char*>(PyArray_DATA(a));
  views_.reserve(n);
  AllocatorGuard guard{NpyString_acquire_allocator(descr)};
  for (std::size_t i = 0; i < n; ++i) {
    const auto* packed = reinterpret_cast<const npy_packed_static_string*>(base + static_cast<npy_intp>(i) * stride);
    npy_static_string s = {0, nullptr};
    const int rc = NpyString_load(guard.a, packed, &s);
    if (rc == 1)
      throw py::value_error("element " + std::to_string(i) +
                            " is a null (the StringDType's na_object); keys contain nulls: drop or fill them before "
                            "updating");
    if (rc != 0) throw py::value_error("element " + std::to_string(i) + " of the StringDType array could not be read");
    views_.emplace_back(s.size ? s.buf : "", s.size);
  }
  allocator_ = guard.a;
  guard.a = nullptr;
}

StringDTypeBatch::~StringDTypeBatch() {
  if (allocator_) NpyString_release_allocator(static_cast<npy_string_allocator*>(allocator_));
}

}  // namespace dpsketch::bindings
