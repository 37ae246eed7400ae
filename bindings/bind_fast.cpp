// Per-item update at C speed. The public Python classes lock every call with an ObjectLock (a
// re-entrant lock that waits with the GIL released); their class attribute `update` is a
// FastUpdate method descriptor: for obj.update(x) with the key type fixed it takes the same lock,
// converts a plain int or str in C and calls the native update (state in the object's `_fast`
// slot, read at a fixed offset) -- no Python frame, no dict lookup, no pybind11 dispatch, no
// bound-method object. Anything unusual (another type, a subclass, an int outside int64, a str
// that is not valid UTF-8, a native exception, a key type not fixed yet) goes to the Python slow
// path, which raises the documented errors. The dyadic sketches take the same route for
// obj.update(x) and obj.update(x, count): an int item, or with bounds an int or float value
// mapped in C exactly as the batch path maps it. Also: a direct conversion of a list of ints.
#include <Python.h>
#include <structmember.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <string_view>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/release/private_dyadic.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace py = pybind11;
using namespace dpsketch;

namespace {

// ---- ObjectLock ----------------------------------------------------------------------------
// Its state (owner, count, waiters) is only read and written with the GIL held -- every acquire and
// release comes from Python code or from fast_call, both under the GIL -- so the uncontended path
// is two plain loads and stores, no atomic read-modify-write. A thread that must wait releases the
// GIL and sleeps on a condition variable; a release that sees waiters bumps a generation counter
// under the mutex and wakes them (the waiter read the generation before letting the GIL go, so no
// wake-up is lost). Batches keep the lock while they run C++ with the GIL released. (The module
// does not declare free-threading support, so a free-threaded CPython re-enables the GIL when it
// imports it: the GIL-protected state stays protected there too.)

struct LockObject {
  PyObject_HEAD
  PyThreadState* owner;  // GIL-protected
  long count;            // GIL-protected
  long waiters;          // GIL-protected
  std::uint64_t generation;  // guarded by mu
  std::mutex* mu;
  std::condition_variable* cv;
};

void lock_acquire(LockObject* l) {
  PyThreadState* const me = PyThreadState_Get();
  for (;;) {
    if (l->owner == nullptr) {
      l->owner = me;
      l->count = 1;
      return;
    }
    if (l->owner == me) {
      ++l->count;
      return;
    }
    std::uint64_t seen;
    {
      std::lock_guard<std::mutex> g(*l->mu);
      seen = l->generation;
    }
    ++l->waiters;
    Py_BEGIN_ALLOW_THREADS
    {
      std::unique_lock<std::mutex> g(*l->mu);
      l->cv->wait(g, [&] { return l->generation != seen; });
    }
    Py_END_ALLOW_THREADS
    --l->waiters;
  }
}

bool lock_release(LockObject* l) {
  if (l->owner != PyThreadState_Get() || l->count <= 0) {
    PyErr_SetString(PyExc_RuntimeError, "cannot release an ObjectLock this thread does not hold");
    return false;
  }
  if (--l->count == 0) {
    l->owner = nullptr;
    if (l->waiters > 0) {
      {
        std::lock_guard<std::mutex> g(*l->mu);
        ++l->generation;
      }
      l->cv->notify_all();
    }
  }
  return true;
}

PyObject* lock_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<LockObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->owner = nullptr;
  self->count = 0;
  self->waiters = 0;
  self->generation = 0;
  self->mu = new (std::nothrow) std::mutex();
  self->cv = new (std::nothrow) std::condition_variable();
  if (!self->mu || !self->cv) {
    Py_DECREF(self);  // lock_dealloc deletes whichever was made
    return PyErr_NoMemory();
  }
  return reinterpret_cast<PyObject*>(self);
}

void lock_dealloc(PyObject* o) {
  auto* self = reinterpret_cast<LockObject*>(o);
  delete self->mu;
  delete self->cv;
  PyTypeObject* tp = Py_TYPE(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

PyObject* lock_enter(PyObject* o, PyObject*) {
  lock_acquire(reinterpret_cast<LockObject*>(o));
  Py_INCREF(o);
  return o;
}

PyObject* lock_exit(PyObject* o, PyObject*) {
  if (!lock_release(reinterpret_cast<LockObject*>(o))) return nullptr;
  Py_RETURN_FALSE;
}

PyMethodDef lock_methods[] = {
    {"acquire", lock_enter, METH_NOARGS, "Acquire (re-entrant; waits with the GIL released)."},
    {"release", lock_exit, METH_NOARGS, "Release."},
    {"__enter__", lock_enter, METH_NOARGS, nullptr},
    {"__exit__", lock_exit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot lock_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(lock_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(lock_dealloc)},
    {Py_tp_methods, lock_methods},
    {Py_tp_doc, const_cast<char*>("Re-entrant per-object lock shared by the Python wrappers and the native fast update.")},
    {0, nullptr},
};

PyType_Spec lock_spec = {"dpsketch._core.ObjectLock", sizeof(LockObject), 0, Py_TPFLAGS_DEFAULT, lock_slots};

// ---- Updater -------------------------------------------------------------------------------

// The arguments after the object (args[0..nargs)); 0 done, 1 not handled here (use the slow path).
using UpdateFn = int (*)(void*, PyObject* const*, Py_ssize_t);

template <class T>
int update_int(void* native, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1) return 1;
  PyObject* key = args[0];
  if (!PyLong_CheckExact(key)) return 1;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(key, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return 1;
  }
  try {
    static_cast<T*>(native)->update(static_cast<std::int64_t>(v));
  } catch (...) {
    return 1;  // the slow path repeats the call and raises the translated error
  }
  return 0;
}

template <class T>
int update_str(void* native, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1) return 1;
  PyObject* key = args[0];
  if (!PyUnicode_CheckExact(key)) return 1;
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(key, &n);
  if (!s) {  // lone surrogate: the slow path raises an error that does not echo the key
    PyErr_Clear();
    return 1;
  }
  try {
    static_cast<T*>(native)->update(std::string_view(s, static_cast<std::size_t>(n)));
  } catch (...) {
    return 1;
  }
  return 0;
}

// An exact int in the int64 range, or false (an error indicator is never left set).
inline bool exact_int64(PyObject* o, long long& v) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  return true;
}

inline const dyadic::DyadicCountSketch& sketch_of(const dyadic::DyadicCountSketch& s) { return s; }
inline const dyadic::DyadicCountSketch& sketch_of(const dyadic::PrivateDyadicCountSketch& s) { return s.sketch(); }

// obj.update(item[, count]) of a dyadic sketch (T: DyadicCountSketch or PrivateDyadicCountSketch).
// Handled here: an exact int item in [0, 2^L) without bounds; with bounds an exact int in the int64
// range or a float that is not NaN (float subclasses such as numpy.float64 included), mapped by
// bucket_of; an optional exact int count in [-2^62, 2^62]. Everything else (bools, NaN, other
// types, out-of-range items and counts, a refused update) is left to the Python method, which
// raises its documented errors.
template <class T>
int update_dyadic(void* native, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1 && nargs != 2) return 1;
  long long count = 1;
  if (nargs == 2) {
    constexpr long long kMaxCount = 1LL << 62;
    if (!exact_int64(args[1], count) || count < -kMaxCount || count > kMaxCount) return 1;
  }
  auto& s = *static_cast<T*>(native);
  const dyadic::DyadicCountSketch& sk = sketch_of(s);
  PyObject* item = args[0];
  std::uint64_t x;
  long long v;
  if (sk.meta().has_bounds) {
    double value;
    if (PyFloat_Check(item)) value = PyFloat_AS_DOUBLE(item);
    else if (exact_int64(item, v)) value = static_cast<double>(v);  // as numpy's int64 -> float64
    else return 1;
    if (std::isnan(value)) return 1;
    x = sk.bucket_of(value);
  } else {
    if (!exact_int64(item, v) || v < 0 || static_cast<std::uint64_t>(v) > sk.max_item()) return 1;
    x = static_cast<std::uint64_t>(v);
  }
  try {
    s.update(x, static_cast<std::int64_t>(count));
  } catch (...) {
    return 1;  // nothing changed (update checks before it writes); the slow path raises the error
  }
  return 0;
}

// The native state of one public object's fast path, and the only place its `_impl` and
// `_key_type_fixed` live: Keyed exposes both as properties over this object, so whatever replaces
// the native structure or fixes the key type goes through cache_set_impl / cache_set_fixed and
// the fast path can never update a structure the object no longer uses. Kept in the object's
// `_fast` slot; it holds the native structure and the object's lock, never the object itself (no
// reference cycle: `del obj` frees the native memory at once).
struct CacheObject {
  PyObject_HEAD
  PyObject* impl;  // the native pybind11 object or None (strong)
  PyObject* lock;  // the owner's ObjectLock (strong)
  void* native;
  UpdateFn fn;     // null: impl's class has no fast path
  int fixed;       // the owner's key type is fixed
};

PyTypeObject* g_lock_type = nullptr;
PyTypeObject* g_cache_type = nullptr;
// The registered classes (dpsketch._keyed.FastUpdated, the base of every summary, sketch and dyadic
// sketch) and the offset of their instances' `_fast` slot.
struct FastClass {
  PyTypeObject* type;
  Py_ssize_t offset;
};
constexpr int kMaxFastClasses = 4;
FastClass g_fast_classes[kMaxFastClasses] = {};
int g_fast_class_count = 0;

// The `_fast` slot's content when `obj` is an instance of a registered class, else null (borrowed).
inline PyObject* fast_state_of(PyObject* obj) {
  for (int i = 0; i < g_fast_class_count; ++i)
    if (PyObject_TypeCheck(obj, g_fast_classes[i].type))
      return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + g_fast_classes[i].offset);
  return nullptr;
}

bool match_any(const py::handle& impl, void*& native, UpdateFn& fn);

void cache_dealloc(PyObject* o) {
  auto* self = reinterpret_cast<CacheObject*>(o);
  Py_CLEAR(self->impl);
  Py_CLEAR(self->lock);
  PyTypeObject* tp = Py_TYPE(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

int cache_set_impl(PyObject* o, PyObject* impl, void*) {
  if (impl == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "the native structure cannot be deleted");
    return -1;
  }
  auto* self = reinterpret_cast<CacheObject*>(o);
  void* native = nullptr;
  UpdateFn fn = nullptr;
  try {
    if (!match_any(impl, native, fn)) fn = nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
    return -1;
  }
  Py_INCREF(impl);
  Py_SETREF(self->impl, impl);
  self->native = native;
  self->fn = fn;
  return 0;
}

PyObject* cache_get_impl(PyObject* o, void*) {
  PyObject* impl = reinterpret_cast<CacheObject*>(o)->impl;
  Py_INCREF(impl);
  return impl;
}

int cache_set_fixed(PyObject* o, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "the key-type flag cannot be deleted");
    return -1;
  }
  const int t = PyObject_IsTrue(value);
  if (t < 0) return -1;
  reinterpret_cast<CacheObject*>(o)->fixed = t;
  return 0;
}

PyObject* cache_get_fixed(PyObject* o, void*) { return PyBool_FromLong(reinterpret_cast<CacheObject*>(o)->fixed); }

PyGetSetDef cache_getset[] = {
    {"impl", cache_get_impl, cache_set_impl, "the native structure (setting it re-targets the fast path)", nullptr},
    {"fixed", cache_get_fixed, cache_set_fixed, "whether the owner's key type is fixed", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot cache_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(cache_dealloc)},
    {Py_tp_getset, cache_getset},
    {Py_tp_doc, const_cast<char*>("Native state of one object's fast update path.")},
    {0, nullptr},
};

PyType_Spec cache_spec = {"dpsketch._core.FastUpdateState", sizeof(CacheObject), 0, Py_TPFLAGS_DEFAULT, cache_slots};

// ---- FastUpdate: the class attribute `update` --------------------------------------------
// A method descriptor (like a Python function in a class): `obj.update(x)` calls it as
// update(obj, x) without creating a bound method, `obj.update` alone gives a bound method.

struct FastUpdateObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* slow;  // the Python update function, called as slow(obj, *args, **kwargs)
};

PyObject* fast_call(PyObject* o, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<FastUpdateObject*>(o);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if ((nargs == 2 || nargs == 3) && kwnames == nullptr) {
    PyObject* cache = fast_state_of(args[0]);
    if (cache != nullptr && Py_TYPE(cache) == g_cache_type) {
      auto* c = reinterpret_cast<CacheObject*>(cache);
      if (c->fn != nullptr && c->fixed) {
        // Waiting for the lock releases the GIL, so other threads may run meanwhile: hold the
        // state (and with it the lock) alive, and read fn/native only once the lock is held.
        Py_INCREF(cache);
        auto* lock = reinterpret_cast<LockObject*>(c->lock);
        lock_acquire(lock);
        const int r = (c->fn != nullptr && c->fixed) ? c->fn(c->native, args + 1, nargs - 1) : 1;
        const bool released = lock_release(lock);
        Py_DECREF(cache);
        if (!released) return nullptr;
        if (r == 0) Py_RETURN_NONE;
      }
    }
  }
  return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

PyObject* fast_get(PyObject* o, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(o);
    return o;
  }
  return PyMethod_New(o, obj);
}

PyObject* fast_tp_call(PyObject* o, PyObject* args, PyObject* kwargs) { return PyVectorcall_Call(o, args, kwargs); }

int fast_traverse(PyObject* o, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<FastUpdateObject*>(o)->slow);
  Py_VISIT(Py_TYPE(o));
  return 0;
}

int fast_clear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<FastUpdateObject*>(o)->slow);
  return 0;
}

void fast_dealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  fast_clear(o);
  PyTypeObject* tp = Py_TYPE(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

PyObject* fast_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject* slow = nullptr;
  if (kwargs && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "FastUpdate(slow) takes one positional argument");
    return nullptr;
  }
  if (!PyArg_ParseTuple(args, "O:FastUpdate", &slow)) return nullptr;
  auto* self = reinterpret_cast<FastUpdateObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = fast_call;
  Py_INCREF(slow);
  self->slow = slow;
  return reinterpret_cast<PyObject*>(self);
}

PyObject* fast_getattr(PyObject* o, PyObject* name) {
  // __doc__, __name__, __wrapped__ ... come from the slow function (help(obj.update) shows its doc)
  if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "__doc__") == 0 ||
                                 PyUnicode_CompareWithASCIIString(name, "__name__") == 0 ||
                                 PyUnicode_CompareWithASCIIString(name, "__qualname__") == 0))
    return PyObject_GetAttr(reinterpret_cast<FastUpdateObject*>(o)->slow, name);
  PyObject* r = PyObject_GenericGetAttr(o, name);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<FastUpdateObject*>(o)->slow, name);
}

PyMemberDef fast_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(FastUpdateObject, vectorcall)), READONLY, nullptr},
    {"__wrapped__", T_OBJECT, static_cast<Py_ssize_t>(offsetof(FastUpdateObject, slow)), READONLY, "the Python update"},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot fast_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(fast_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(fast_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(fast_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(fast_clear)},
    {Py_tp_call, reinterpret_cast<void*>(fast_tp_call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(fast_get)},
    {Py_tp_getattro, reinterpret_cast<void*>(fast_getattr)},
    {Py_tp_members, fast_members},
    {0, nullptr},
};

PyType_Spec fast_spec = {"dpsketch._core.FastUpdate", sizeof(FastUpdateObject), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                             Py_TPFLAGS_METHOD_DESCRIPTOR,
                         fast_slots};

template <class T>
bool match(const py::handle& impl, void*& native, UpdateFn& fn, UpdateFn f) {
  if (!py::isinstance<T>(impl)) return false;
  native = static_cast<void*>(py::cast<T*>(impl));
  fn = f;
  return true;
}

bool match_any(const py::handle& impl, void*& native, UpdateFn& fn) {
  using I = std::int64_t;
  using S = std::string;
  return match<SpaceSaving<I>>(impl, native, fn, update_int<SpaceSaving<I>>) ||
         match<SpaceSaving<S>>(impl, native, fn, update_str<SpaceSaving<S>>) ||
         match<MisraGries<I>>(impl, native, fn, update_int<MisraGries<I>>) ||
         match<MisraGries<S>>(impl, native, fn, update_str<MisraGries<S>>) ||
         match<CountMin<I>>(impl, native, fn, update_int<CountMin<I>>) ||
         match<CountMin<S>>(impl, native, fn, update_str<CountMin<S>>) ||
         match<CountSketch<I>>(impl, native, fn, update_int<CountSketch<I>>) ||
         match<CountSketch<S>>(impl, native, fn, update_str<CountSketch<S>>) ||
         match<dyadic::DyadicCountSketch>(impl, native, fn, update_dyadic<dyadic::DyadicCountSketch>) ||
         match<dyadic::PrivateDyadicCountSketch>(impl, native, fn, update_dyadic<dyadic::PrivateDyadicCountSketch>);
}

// The fast-path state for `impl` (fn is null when impl's class has no fast path).
py::object make_fast_state(py::object impl, py::object lock) {
  if (!PyObject_TypeCheck(lock.ptr(), g_lock_type)) throw py::type_error("lock must be an ObjectLock");
  void* native = nullptr;
  UpdateFn fn = nullptr;
  if (!match_any(impl, native, fn)) fn = nullptr;
  auto* self = reinterpret_cast<CacheObject*>(g_cache_type->tp_alloc(g_cache_type, 0));
  if (!self) throw py::error_already_set();
  self->impl = impl.release().ptr();
  self->lock = lock.release().ptr();
  self->native = native;
  self->fn = fn;
  self->fixed = 0;
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
}

// register_fast_class(cls): a class whose instances carry the fast-path state in a `_fast` slot
// (registering a class again updates its entry).
void register_fast_class(py::object cls) {
  if (!PyType_Check(cls.ptr())) throw py::type_error("register_fast_class expects a class");
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  PyObject* descr = PyDict_GetItemString(type->tp_dict, "_fast");
  if (descr == nullptr || Py_TYPE(descr) != &PyMemberDescr_Type)
    throw py::type_error("register_fast_class expects a class with a `_fast` slot");
  const PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
  if (member->type != T_OBJECT_EX || member->offset <= 0) throw py::type_error("`_fast` is not an object slot");
  int i = 0;
  while (i < g_fast_class_count && g_fast_classes[i].type != type) ++i;
  if (i == kMaxFastClasses) throw py::value_error("too many fast-update classes");
  if (i == g_fast_class_count) {
    Py_INCREF(cls.ptr());  // kept for the module's life
    ++g_fast_class_count;
  }
  g_fast_classes[i] = FastClass{type, member->offset};
}

// A list/tuple of exact ints -> int64 array in one C pass; None when some element is not an
// exact int or is out of range (the caller's element-wise path then names it).
py::object int_list_to_array(const py::handle& seq) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) return py::none();
  PyObject* fast = seq.ptr();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  py::array_t<std::int64_t> out(n);
  auto* o = out.mutable_data();
  PyObject** items = PySequence_Fast_ITEMS(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = items[i];
    if (!PyLong_CheckExact(x)) return py::none();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return py::none();
    }
    o[i] = static_cast<std::int64_t>(v);
  }
  return std::move(out);
}

}  // namespace

void bind_lines(py::module_& m);  // bind_lines.cpp

void bind_fast(py::module_& m) {
  bind_lines(m);
  g_lock_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&lock_spec));
  if (!g_lock_type) throw py::error_already_set();
  g_cache_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&cache_spec));
  if (!g_cache_type) throw py::error_already_set();
  auto* fast_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&fast_spec));
  if (!fast_type) throw py::error_already_set();
  m.attr("ObjectLock") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_lock_type));
  m.attr("FastUpdateState") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_cache_type));
  m.attr("FastUpdate") = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(fast_type));
  m.def("make_fast_state", &make_fast_state, py::arg("impl"), py::arg("lock"));
  m.def("register_fast_class", &register_fast_class, py::arg("cls"));
  m.def("int_list_to_array", &int_list_to_array, py::arg("items"));
}
