// Shared binding helpers: batch key feeders that validate with the GIL held, then run the C++
// loop with the GIL released; and the key-type-specific method sets shared by every summary.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/serialization.hpp"
#include "numpy_strings.hpp"

namespace dpsketch::bindings {

namespace py = pybind11;

template <class T, class = void>
struct has_update_many : std::false_type {};
template <class T>
struct has_update_many<T, std::void_t<decltype(std::declval<T&>().update_many(std::declval<const std::int64_t*>(),
                                                                             std::declval<const std::int64_t*>()))>>
    : std::true_type {};

using IntArray = py::array_t<std::int64_t, py::array::c_style>;

// Linear sketches take turnstile updates: update(view, int64 count) (the counter summaries do not).
template <class T, class = void>
struct takes_counts : std::false_type {};
template <class T>
struct takes_counts<T, std::void_t<decltype(std::declval<T&>().update(
                           std::declval<const typename T::key_type&>(), std::declval<std::int64_t>()))>>
    : std::true_type {};

inline void check_counts_array(const IntArray& counts, std::size_t n) {
  if (counts.ndim() != 1 || static_cast<std::size_t>(counts.shape(0)) != n)
    throw py::value_error("counts must be a 1-D int64 array with one signed count per item");
}

// Feeds a whole int64 array through T's own batch loop (update_many(first, last) where T has one),
// GIL released.
template <class T>
void update_ints(T& s, const IntArray& a) {
  if (a.ndim() != 1) throw py::value_error("expected a 1-D int64 array, got " + std::to_string(a.ndim()) + " dimensions");
  const std::int64_t* p = a.data();
  const auto n = static_cast<std::size_t>(a.shape(0));
  py::gil_scoped_release nogil;
  if constexpr (has_update_many<T>::value) {
    s.update_many(p, p + n);
  } else {
    for (std::size_t i = 0; i < n; ++i) s.update(p[i]);
  }
}

// UTF-8 encoding of one code point; false for surrogates and values beyond U+10FFFF.
inline bool append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    return false;
  }
  return true;
}

// Length of one numpy 'U' element: numpy pads with NUL code points (a string never ends in NUL,
// but may hold NULs inside), so the length is one past the last non-NUL code point.
// Narrow elements (<= 128 code points) are scanned from the end, 8 code points per step: short
// keys end near the start, and a few cache lines need no streaming. Wider ones (a U499 element is
// ~2 KB, mostly padding) are read front to back, 16 code points per step, so consecutive elements
// form one forward stream the hardware prefetcher follows (it pays off for wide elements only);
// only the last non-zero block is then looked into.
inline std::size_t ucs4_length(const std::uint32_t* s, std::size_t width) {
  std::size_t len = width;
  if (width <= 128) {
    while (len >= 8) {
      std::uint64_t w[4];
      std::memcpy(w, s + len - 8, sizeof w);
      if ((w[0] | w[1] | w[2] | w[3]) != 0) break;
      len -= 8;
    }
    while (len > 0 && s[len - 1] == 0) --len;
    return len;
  }
  std::size_t block_end = 0;  // end of the last 16-code-point block holding a non-NUL
  std::size_t i = 0;
  for (; i + 16 <= width; i += 16) {
    std::uint64_t w[8];
    std::memcpy(w, s + i, sizeof w);
    if (((w[0] | w[1]) | (w[2] | w[3]) | ((w[4] | w[5]) | (w[6] | w[7]))) != 0) block_end = i + 16;
  }
  while (len > i && s[len - 1] == 0) --len;  // the tail (< 16 code points) first
  if (len > i) return len;
  len = block_end;
  while (len > 0 && s[len - 1] == 0) --len;
  return len;
}

// None, a float NaN, or pandas' NA / NaT: a missing value rather than a wrong key type.
inline bool is_null_like(PyObject* o) {
  if (o == Py_None) return true;
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o) != PyFloat_AS_DOUBLE(o);
  const std::string_view name = Py_TYPE(o)->tp_name;
  return name == "NAType" || name == "NaTType";
}

// The UTF-8 view of element i of a str batch, or a Python error naming the element (nothing set
// on success). The view lives as long as the str object.
inline std::string_view checked_str(PyObject* o, std::size_t i) {
  if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o))  // ASCII is its own UTF-8: no call
    return {static_cast<const char*>(PyUnicode_DATA(o)), static_cast<std::size_t>(PyUnicode_GET_LENGTH(o))};
  if (!PyUnicode_Check(o)) {
    if (is_null_like(o))
      throw py::value_error("element " + std::to_string(i) + " is a null (" + Py_TYPE(o)->tp_name +
                            "); keys contain nulls: drop or fill them before updating");
    throw py::type_error("element " + std::to_string(i) + " has type " + std::string(Py_TYPE(o)->tp_name) +
                         ", but this summary's keys are str");
  }
  Py_ssize_t len = 0;
  const char* p = PyUnicode_AsUTF8AndSize(o, &len);
  if (!p) {
    PyErr_Clear();
    throw py::value_error("element " + std::to_string(i) + " cannot be encoded as UTF-8 (lone surrogate)");
  }
  return {p, static_cast<std::size_t>(len)};
}

// Elements per block of feed_str_blocks: a block's references and views take 24 B per element
// (96 KiB), and its short str objects (~60 B each) stay in L2 between being viewed and being hashed.
inline constexpr std::size_t kStrBlock = 4096;

// Strong references to one block's elements, dropped with the GIL held.
struct BlockRefs {
  std::vector<PyObject*> refs;
  void clear() noexcept {
    for (PyObject* o : refs) Py_DECREF(o);
    refs.clear();
  }
  ~BlockRefs() { clear(); }
};

// A list, a tuple or a 1-D numpy object array of n str, fed without a copy of the whole batch:
// `at(i)` reads element i (borrowed; valid with the GIL held). The first pass checks every element
// (type, null, UTF-8) with the GIL held and reserves room(n), so a bad batch changes nothing; then
// each block of kStrBlock elements is referenced, viewed and fed with the GIL released. The
// references keep a block's str objects alive while another thread may change the container; an
// element that such a change leaves missing or not a str stops the feed with a RuntimeError (the
// blocks before it are in the summary).
template <class At, class F, class Room>
void feed_str_blocks(std::size_t n, At&& at, F& f, Room& room) {
  for (std::size_t i = 0; i < n; ++i) checked_str(at(i), i);
  room(n);
  BlockRefs held;
  std::vector<std::string_view> views;
  held.refs.reserve(std::min(n, kStrBlock));
  views.reserve(std::min(n, kStrBlock));
  for (std::size_t first = 0; first < n; first += kStrBlock) {
    const std::size_t count = std::min(kStrBlock, n - first);
    views.clear();
    for (std::size_t k = 0; k < count; ++k) {
      PyObject* o = at(first + k);  // null when the container shrank
      if (o == nullptr || !PyUnicode_Check(o))
        throw std::runtime_error("the batch was changed by another thread during update_many; the elements before "
                                 "element " + std::to_string(first + k) + " were added");
      Py_INCREF(o);
      held.refs.push_back(o);
      views.push_back(checked_str(o, first + k));
    }
    {
      py::gil_scoped_release nogil;
      for (const auto& v : views) f(v);
    }
    held.clear();
  }
}

// Default "room" check of the batch feeders: none.
struct NoRoomCheck {
  void operator()(std::size_t) const noexcept {}
};

// Calls f(string_view) for each string of: a numpy unicode ('U') or StringDType ('T') array, a
// numpy object array of str, or any Python sequence of str. Validation (types, encodability, and
// room(count): the stream limit) happens before any key is fed, so a bad batch leaves the summary
// untouched.
template <class F, class Room = NoRoomCheck>
void for_each_str(const py::object& items, F&& f, Room&& room = Room{}) {
  if (py::isinstance<py::array>(items)) {
    py::array arr = py::reinterpret_borrow<py::array>(items);
    const char kind = arr.dtype().kind();
    if (kind == 'U') {
      if (arr.ndim() != 1) throw py::value_error("expected a 1-D array of str");
      arr = py::array::ensure(arr, py::array::c_style);
      const auto n = static_cast<std::size_t>(arr.shape(0));
      const std::size_t width = static_cast<std::size_t>(arr.itemsize()) / 4;
      const auto* base = static_cast<const std::uint32_t*>(arr.data());
      // Two passes, GIL released: lengths and validity first (all-or-nothing on bad code points),
      // then encode and feed. Only the first pass reads the NUL padding; wide dtypes are bounded by
      // reading it (memory bandwidth, docs/benchmarks.md).
      std::vector<std::uint32_t> lens(n);
      std::size_t bad = SIZE_MAX;
      {
        py::gil_scoped_release nogil;
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t* s = base + i * width;
          const std::size_t len = ucs4_length(s, width);
          lens[i] = static_cast<std::uint32_t>(len);
          for (std::size_t j = 0; j < len; ++j)
            if ((s[j] >= 0xD800 && s[j] <= 0xDFFF) || s[j] > 0x10FFFF) { bad = i; break; }
          if (bad != SIZE_MAX) break;
        }
      }
      if (bad != SIZE_MAX)
        throw py::value_error("element " + std::to_string(bad) + " is not valid Unicode (surrogate code point); clean the input first");
      room(n);
      py::gil_scoped_release nogil;
      std::string buf;
      if (width <= 32) {  // a 128-byte element: encode and feed one at a time
        buf.reserve(4 * width);
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t* s = base + i * width;
          buf.clear();
          for (std::size_t j = 0; j < lens[i]; ++j) append_utf8(buf, s[j]);
          f(std::string_view(buf));
        }
        return;
      }
      // Wider elements start on lines long out of cache: encode a chunk of them into one buffer,
      // then feed it. The encoding loop's loads are independent across elements, so their misses
      // overlap. For narrow elements the extra buffer costs more than it saves, hence the split.
      constexpr std::size_t kChunk = 256;
      std::size_t ends[kChunk];
      for (std::size_t first = 0; first < n; first += kChunk) {
        const std::size_t count = std::min(kChunk, n - first);
        buf.clear();
        for (std::size_t c = 0; c < count; ++c) {
          const std::uint32_t* s = base + (first + c) * width;
          for (std::size_t j = 0, len = lens[first + c]; j < len; ++j) append_utf8(buf, s[j]);
          ends[c] = buf.size();
        }
        std::size_t start = 0;
        for (std::size_t c = 0; c < count; ++c) {
          f(std::string_view(buf.data() + start, ends[c] - start));
          start = ends[c];
        }
      }
      return;
    }
    if (kind == 'T') {  // numpy >= 2 StringDType: UTF-8 already, read under numpy's string lock
      StringDTypeBatch batch(arr);
      room(batch.views().size());
      py::gil_scoped_release nogil;
      for (const auto& v : batch.views()) f(v);
      return;
    }
    if (kind != 'O')
      throw py::type_error("expected str keys, got a numpy array of dtype " + std::string(py::str(arr.dtype())) +
                           "; use an int-keyed summary for integers");
  }
  if (py::isinstance<py::str>(items) || py::isinstance<py::bytes>(items))
    throw py::type_error("update_many takes a sequence of keys, not a single string; use update(key)");
  PyObject* seq = items.ptr();
  if (PyList_Check(seq)) {
    feed_str_blocks(static_cast<std::size_t>(PyList_GET_SIZE(seq)), [seq](std::size_t i) -> PyObject* {
      return static_cast<Py_ssize_t>(i) < PyList_GET_SIZE(seq) ? PyList_GET_ITEM(seq, static_cast<Py_ssize_t>(i)) : nullptr;
    }, f, room);
    return;
  }
  if (PyTuple_Check(seq)) {
    feed_str_blocks(static_cast<std::size_t>(PyTuple_GET_SIZE(seq)), [seq](std::size_t i) -> PyObject* {
      return PyTuple_GET_ITEM(seq, static_cast<Py_ssize_t>(i));
    }, f, room);
    return;
  }
  if (py::isinstance<py::array>(items)) {  // a numpy object array (other dtypes returned above)
    const auto arr = py::reinterpret_borrow<py::array>(items);
    if (arr.ndim() != 1) throw py::value_error("expected a 1-D array of str");
    const Py_ssize_t stride = arr.strides(0);
    const char* base = static_cast<const char*>(arr.data());
    feed_str_blocks(static_cast<std::size_t>(arr.shape(0)), [base, stride](std::size_t i) -> PyObject* {
      PyObject* o = *reinterpret_cast<PyObject* const*>(base + static_cast<Py_ssize_t>(i) * stride);
      return o != nullptr ? o : Py_None;  // numpy allows NULL object slots in fresh arrays: they read as None
    }, f, room);
    return;
  }
  // Any other iterable: materialised once as a tuple.
  py::tuple tup = py::reinterpret_steal<py::tuple>(PySequence_Tuple(seq));
  if (!tup) throw py::error_already_set();
  feed_str_blocks(static_cast<std::size_t>(PyTuple_GET_SIZE(tup.ptr())), [&tup](std::size_t i) -> PyObject* {
    return PyTuple_GET_ITEM(tup.ptr(), static_cast<Py_ssize_t>(i));
  }, f, room);
}

// Arrow string views (polars' strings): 16 bytes per key -- its length (u32), then the bytes
// themselves when they fit in 12, else a 4-byte prefix, the index of a data buffer and the offset
// in it (u32 each) -- read in place. Every view is checked against its buffer before any key is
// fed (a view built by hand may point anywhere), so a bad batch changes nothing.
template <class F, class Room = NoRoomCheck>
void for_each_utf8_view(const py::array_t<std::uint8_t, py::array::c_style>& views, const py::list& buffers, F&& f,
                        Room&& room = Room{}) {
  if (views.ndim() != 1 || views.shape(0) % 16 != 0) throw py::value_error("expected 16 bytes of view per key");
  std::vector<py::array_t<std::uint8_t, py::array::c_style>> held;  // keeps the buffers alive and contiguous
  std::vector<const char*> data;
  std::vector<std::uint64_t> sizes;
  for (const py::handle b : buffers) {
    held.push_back(py::cast<py::array_t<std::uint8_t, py::array::c_style>>(b));
    if (held.back().ndim() != 1) throw py::value_error("expected 1-D data buffers");
    data.push_back(reinterpret_cast<const char*>(held.back().data()));
    sizes.push_back(static_cast<std::uint64_t>(held.back().shape(0)));
  }
  const auto m = static_cast<std::size_t>(views.shape(0)) / 16;
  const std::uint8_t* v = views.data();
  const auto u32 = [](const std::uint8_t* p) {
    std::uint32_t x;
    std::memcpy(&x, p, 4);
    return x;
  };
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint8_t* e = v + 16 * i;
    const std::uint32_t len = u32(e);
    if (len > 0x7FFFFFFFu) throw py::value_error("a string view has a negative length");
    if (len > 12) {
      const std::uint32_t buf = u32(e + 8), off = u32(e + 12);
      if (buf >= sizes.size() || std::uint64_t{off} + len > sizes[buf])
        throw py::value_error("a string view points outside its data buffers");
    }
  }
  room(m);
  py::gil_scoped_release nogil;
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint8_t* e = v + 16 * i;
    const std::uint32_t len = u32(e);
    f(len <= 12 ? std::string_view(reinterpret_cast<const char*>(e + 4), len)
                : std::string_view(data[u32(e + 8)] + u32(e + 12), len));
  }
}

// Arrow-style batch: UTF-8 bytes plus n+1 offsets, int64 (large_string) or int32 (string), read in
// place either way (pyarrow string arrays pass their buffers).
template <class Offset, class F, class Room>
void for_each_utf8_offsets_of(const py::array_t<std::uint8_t, py::array::c_style>& data, const Offset* off,
                              std::size_t m, F&& f, Room&& room) {
  const auto size = static_cast<std::int64_t>(data.shape(0));
  for (std::size_t i = 0; i < m; ++i)
    if (off[i] < 0 || off[i] > size || (i > 0 && off[i] < off[i - 1]))
      throw py::value_error("string offsets must be non-decreasing and within the data buffer");
  room(m - 1);
  const char* p = reinterpret_cast<const char*>(data.data());
  py::gil_scoped_release nogil;
  for (std::size_t i = 0; i + 1 < m; ++i)
    f(std::string_view(p + off[i], static_cast<std::size_t>(off[i + 1] - off[i])));
}

template <class F, class Room = NoRoomCheck>
void for_each_utf8_offsets(const py::array_t<std::uint8_t, py::array::c_style>& data, const py::array& offsets, F&& f,
                           Room&& room = Room{}) {
  if (data.ndim() != 1 || offsets.ndim() != 1 || offsets.shape(0) < 1)
    throw py::value_error("expected 1-D data bytes and at least one offset");
  const auto m = static_cast<std::size_t>(offsets.shape(0));
  if (offsets.dtype().kind() == 'i' && offsets.itemsize() == 4) {
    const auto o = py::array_t<std::int32_t, py::array::c_style>::ensure(offsets);  // a view when contiguous
    if (!o) throw py::error_already_set();
    for_each_utf8_offsets_of(data, o.data(), m, f, room);
    return;
  }
  const auto o = IntArray::ensure(offsets);
  if (!o) throw py::error_already_set();
  for_each_utf8_offsets_of(data, o.data(), m, f, room);
}

inline py::str to_py(const std::string& s) { return py::str(s.data(), s.size()); }
inline py::int_ to_py(std::int64_t v) { return py::int_(v); }

// Python bytes -> string_view (no copy); the bytes object outlives the call.
inline std::string_view view_of(const py::bytes& b) {
  char* p = nullptr;
  Py_ssize_t n = 0;
  if (PyBytes_AsStringAndSize(b.ptr(), &p, &n) != 0) throw py::error_already_set();
  return {p, static_cast<std::size_t>(n)};
}

// Whether T takes an update with its slot-table hash already computed (the counter summaries).
template <class T, class = void>
struct takes_table_hash : std::false_type {};
template <class T>
struct takes_table_hash<T, std::void_t<decltype(std::declval<T&>().update_hashed(
                               std::uint64_t{}, std::declval<const typename KeyTraits<typename T::key_type>::view_type&>()))>>
    : std::true_type {};

// Whether T stores keys it can list (the counter summaries) -- the linear sketches keep none.
template <class T, class = void>
struct lists_keys : std::false_type {};
template <class T>
struct lists_keys<T, std::void_t<decltype(std::declval<const T&>().for_each(
                         std::declval<void (*)(const typename T::key_type&, std::uint64_t)>()))>>
    : std::true_type {};

// The C++ structures take any byte strings as keys, but Python keys are str: restored bytes whose
// string keys are not valid UTF-8 are corrupt (they could never be listed or estimated from Python).
template <class T>
void check_restored_keys(const T& s) {
  if constexpr (std::is_same_v<typename T::key_type, std::string> && lists_keys<T>::value) {
    bool ok = true;
    s.for_each([&](const std::string& k, std::uint64_t) {
      if (!ok) return;
      PyObject* o = PyUnicode_DecodeUTF8(k.data(), static_cast<Py_ssize_t>(k.size()), "strict");
      if (o) Py_DECREF(o); else { PyErr_Clear(); ok = false; }
    });
    if (!ok) throw py::value_error("corrupt or incompatible dpsketch bytes: a string key is not valid UTF-8");
  }
}

// Turnstile methods of the linear sketches: update_counted(key, count), update_many_counted(keys,
// counts) (all-or-nothing: the total |count| is checked first; GIL released for int keys).
template <class T, class Cls>
void def_counted(Cls& c) {
  using Key = typename T::key_type;
  if constexpr (std::is_same_v<Key, std::int64_t>) {
    c.def("update_counted", [](T& s, std::int64_t x, std::int64_t count) { s.update(x, count); });
    c.def("update_many_counted", [](T& s, const IntArray& a, const IntArray& counts) {
      if (a.ndim() != 1) throw py::value_error("expected a 1-D int64 array");
      const auto n = static_cast<std::size_t>(a.shape(0));
      check_counts_array(counts, n);
      const std::int64_t* p = a.data();
      const std::int64_t* q = counts.data();
      py::gil_scoped_release nogil;
      s.update_many_counted(p, q, n);
    });
  } else {
    c.def("update_counted", [](T& s, std::string_view x, std::int64_t count) { s.update(x, count); });
    c.def("update_many_counted", [](T& s, const py::object& items, const IntArray& counts) {
      check_counts_array(counts, static_cast<std::size_t>(py::len(items)));
      const std::int64_t* q = counts.data();
      const std::uint64_t mass = T::batch_mass(q, static_cast<std::size_t>(counts.shape(0)));  // throws first
      std::size_t k = 0;
      // The mass is reserved once every key has been validated (for_each_str's room callback), so
      // a rejected batch leaves the sketch exactly as it was.
      for_each_str(items, [&](std::string_view x) { s.add_reserved(x, q[k++]); },
                   [&](std::size_t) { s.reserve_mass(mass); });
    });
  }
}

// The release state every serialized object carries (docs/format.md, header flags and trailer):
// from_bytes reads it from the bytes, to_bytes writes it; the Python layer sets it before writing.
template <class T, class Cls>
void def_release_state(Cls& c) {
  c.def("serialized_size", [](const T& s) { return s.serialized_size(); });  // len(to_bytes())
  c.def_property_readonly("release_count", [](const T& s) { return s.release_count(); });
  c.def_property_readonly("published", [](const T& s) { return s.published(); });
  c.def_property_readonly("seeded", [](const T& s) { return s.seeded(); });
  c.def("set_release_state", [](T& s, std::uint64_t count, bool published, bool seeded) {
    s.set_release_state(ReleaseState{count, published, seeded});
  }, py::arg("count"), py::arg("published") = false, py::arg("seeded") = false);
}

// Methods every keyed class has: update, update_many (by key type), estimate, n, memory, bytes,
// release state and the untyped mark (key tag 0: written while the object is still empty).
template <class T, class Cls>
void def_keyed(Cls& c) {
  using Key = typename T::key_type;
  if constexpr (std::is_same_v<Key, std::int64_t>) {
    c.def("update", [](T& s, std::int64_t x) { s.update(x); }, py::arg("item"));
    c.def("update_many", [](T& s, const IntArray& a) { update_ints(s, a); },
          py::arg("items"));
    c.def("estimate", [](const T& s, std::int64_t x) { return s.estimate(x); }, py::arg("item"));
  } else {
    c.def("update", [](T& s, std::string_view x) { s.update(x); }, py::arg("item"));
    const auto room = [](T& s) { return [&s](std::size_t k) { s.check_room(k); }; };  // all-or-nothing batches
    c.def("update_many", [room](T& s, const py::object& items) {
            for_each_str(items, [&](std::string_view x) { s.update(x); }, room(s));
          },
          py::arg("items"));
    c.def("update_many_utf8",
          [room](T& s, const py::array_t<std::uint8_t, py::array::c_style>& data, const py::array& offsets) {
            for_each_utf8_offsets(data, offsets, [&](std::string_view x) { s.update(x); }, room(s));
          },
          py::arg("data"), py::arg("offsets"));
    c.def("update_many_utf8_views",
          [room](T& s, const py::array_t<std::uint8_t, py::array::c_style>& views, const py::list& buffers) {
            for_each_utf8_view(views, buffers, [&](std::string_view x) { s.update(x); }, room(s));
          },
          py::arg("views"), py::arg("buffers"));
    if constexpr (takes_table_hash<T>::value) {
      // The text reader's lines with the table hashes its split computed (split_lines,
      // table_hashes=True): the update thread only does the table work. A hash that is not the
      // key's table hash cannot corrupt memory, but would track the key twice: only split_lines'
      // own output is passed here.
      c.def("update_many_utf8_hashed",
            [room](T& s, const py::array_t<std::uint8_t, py::array::c_style>& data, const py::array& offsets,
                   const py::array_t<std::uint64_t, py::array::c_style>& hashes) {
              if (hashes.ndim() != 1 || offsets.ndim() != 1 || hashes.shape(0) + 1 != offsets.shape(0))
                throw py::value_error("expected one table hash per key");
              const std::uint64_t* h = hashes.data();
              std::size_t i = 0;
              for_each_utf8_offsets(data, offsets, [&](std::string_view x) { s.update_hashed(h[i++], x); }, room(s));
            },
            py::arg("data"), py::arg("offsets"), py::arg("hashes"));
    }
    c.def("estimate", [](const T& s, std::string_view x) { return s.estimate(x); }, py::arg("item"));
  }
  if constexpr (takes_counts<T>::value) def_counted<T>(c);
  c.def_property_readonly("n", &T::n);
  c.def("memory_bytes", &T::memory_bytes);
  c.def("to_bytes", [](const T& s) { return py::bytes(s.serialize()); });
  c.def_static("from_bytes", [](const py::bytes& b) {
    T s = T::deserialize(view_of(b));
    check_restored_keys(s);
    return s;
  }, py::arg("data"));
  def_release_state<T>(c);
  c.def_property("untyped", [](const T& s) { return s.untyped(); }, [](T& s, bool u) { s.set_untyped(u); });
}

// cells() as a (depth, width) array and, for int keys, a GIL-free estimate_many. `sketch(s)` gives
// the LinearSketch inside T (T itself for the non-private sketches).
template <class T, class Cls, class GetSketch>
void def_sketch_queries(Cls& c, GetSketch sketch) {
  c.def("cells", [sketch](const T& s) {
    const auto& sk = sketch(s);
    py::array_t<std::int64_t> a({static_cast<py::ssize_t>(sk.depth()), static_cast<py::ssize_t>(sk.width())});
    std::copy(sk.cells().begin(), sk.cells().end(), a.mutable_data());
    return a;
  });
  if constexpr (std::is_same_v<typename T::key_type, std::int64_t>) {
    c.def("estimate_many", [](const T& s, const IntArray& a) {
      if (a.ndim() != 1) throw py::value_error("expected a 1-D int64 array");
      py::array_t<typename T::estimate_type> out(a.shape(0));
      auto* o = out.mutable_data();
      const auto* p = a.data();
      const auto n = a.shape(0);
      py::gil_scoped_release nogil;
      for (py::ssize_t i = 0; i < n; ++i) o[i] = s.estimate(p[i]);
      return out;
    }, py::arg("items"));
  }
}

}  // namespace dpsketch::bindings
