// numpy's variable-width string arrays (numpy >= 2: `StringDType`, dtype kind 'T') as UTF-8 views,
// read through numpy's C API (numpy_strings.cpp, the only translation unit that includes numpy's
// headers). Their elements are stored UTF-8 without padding, so a batch costs what a list of str
// costs, whatever the string lengths -- unlike fixed-width 'U' arrays, which must be read to their
// full width.
#pragma once

#include <pybind11/numpy.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace dpsketch::bindings {

// Holds the array's string allocator (numpy's lock on its string storage) while alive, so that the
// views stay valid and unchanged while a batch is fed with the GIL released. Construct with the
// GIL held. Throws ValueError for a null element (a StringDType with na_object) and for arrays
// that are not 1-D, with the allocator released.
class StringDTypeBatch {
 public:
  explicit StringDTypeBatch(const pybind11::array& arr);
  ~StringDTypeBatch();
  StringDTypeBatch(const StringDTypeBatch&) = delete;
  StringDTypeBatch& operator=(const StringDTypeBatch&) = delete;

  const std::vector<std::string_view>& views() const noexcept { return views_; }

 private:
  pybind11::array arr_;      // keeps the array (and its string storage) alive
  void* allocator_ = nullptr;  // npy_string_allocator*, released by the destructor
  std::vector<std::string_view> views_;
};

}  // namespace dpsketch::bindings
