// Per-item update at C speed. The public Python classes lock every call with an ObjectLock (a
// re-entrant lock that waits with the GIL released); after the key type is fixed, an object's
// `update` attribute becomes an Updater: a vectorcall object that takes the same lock, converts a
// plain int or str in C and calls the native update -- no Python frame, no pybind11 dispatch.
// Anything unusual (another type, a subclass, an int outside int64, a str that is not valid
// UTF-8, a native exception, or an object whose native structure was replaced) goes to the Python
// slow path, which raises the documented errors. Also: a direct conversion of a list of ints.
#include <Python.h>
#include <pythread.h>
#include <structmember.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <string_view>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace py = pybind11;
using namespace dpsketch;

namespace {

// ---- ObjectLock ----------------------------------------------------------------------------

struct LockObject {
  PyObject_HEAD
  std::mutex* mu;
  std::atomic<unsigned long> owner;
  long count;
};

// Acquire re-entrantly; wait with the GIL released (a batch holding the lock runs without the GIL).
bool lock_acquire(LockObject* l) {
  const unsigned long me = PyThread_get_thread_ident();
  if (l->owner.load(std::memory_order_relaxed) == me) {
    ++l->count;
    return true;
  }
  if (!l->mu->try_lock()) {
    Py_BEGIN_ALLOW_THREADS
    l->mu->lock();
    Py_END_ALLOW_THREADS
  }
  l->owner.store(me, std::memory_order_relaxed);
  l->count = 1;
  return true;
}

bool lock_release(LockObject* l) {
  if (l->owner.load(std::memory_order_relaxed) != PyThread_get_thread_ident() || l->count <= 0) {
    PyErr_SetString(PyExc_RuntimeError, "cannot release an ObjectLock this thread does not hold");
    return false;
  }
  if (--l->count == 0) {
    l->owner.store(0, std::memory_order_relaxed);
    l->mu->unlock();
  }
  return true;
}

PyObject* lock_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<LockObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->mu = new (std::nothrow) std::mutex();
  if (!self->mu) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  new (&self->owner) std::atomic<unsigned long>(0);
  self->count = 0;
  return reinterpret_cast<PyObject*>(self);
}

void lock_dealloc(PyObject* o) {
  auto* self = reinterpret_cast<LockObject*>(o);
  delete self->mu;
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

using UpdateFn = int (*)(void*, PyObject*);  // 0 done, 1 not handled here (use the slow path)

template <class T>
int update_int(void* native, PyObject* key) {
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
int update_str(void* native, PyObject* key) {
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

struct UpdaterObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* impl;      // the native pybind11 object (strong)
  PyObject* lock;      // its owner's ObjectLock
  PyObject* owner_ref;  // weak reference to the public object (no reference cycle: `del` frees it)
  PyObject* slow;      // the Python slow path, an unbound function called as slow(owner, *args)
  void* native;
  UpdateFn fn;
};

PyObject* g_impl_name = nullptr;
PyObject* g_fixed_name = nullptr;

bool match_any(const py::handle& impl, void*& native, UpdateFn& fn);

// Whether the owner is alive, still holds `impl` as _impl and has its key type fixed.
bool owner_current(UpdaterObject* self, PyObject* owner) {
#if PY_VERSION_HEX < 0x030D0000
  PyObject** slot = _PyObject_GetDictPtr(owner);  // borrowed: no reference count traffic
  PyObject* dict = slot ? *slot : nullptr;
  if (!dict) return false;
  const bool ok = PyDict_GetItemWithError(dict, g_impl_name) == self->impl &&
                  PyDict_GetItemWithError(dict, g_fixed_name) == Py_True;
#else
  PyObject* dict = PyObject_GenericGetDict(owner, nullptr);
  if (!dict) {
    PyErr_Clear();
    return false;
  }
  const bool ok = PyDict_GetItemWithError(dict, g_impl_name) == self->impl &&
                  PyDict_GetItemWithError(dict, g_fixed_name) == Py_True;
  Py_DECREF(dict);
#endif
  PyErr_Clear();
  return ok;
}

PyObject* updater_call(PyObject* o, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<UpdaterObject*>(o);
  PyObject* owner = PyWeakref_GetObject(self->owner_ref);  // borrowed; Py_None once dead
  if (owner == nullptr) return nullptr;
  if (owner == Py_None) {
    PyErr_SetString(PyExc_ReferenceError, "the object this update() belonged to no longer exists");
    return nullptr;
  }
  if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == nullptr && self->fn != nullptr && owner_current(self, owner)) {
    auto* lock = reinterpret_cast<LockObject*>(self->lock);
    lock_acquire(lock);
    const int r = self->fn(self->native, args[0]);
    if (!lock_release(lock)) return nullptr;
    if (r == 0) Py_RETURN_NONE;
  }
  if (PyErr_Occurred()) return nullptr;
  PyObject* bound = PyMethod_New(self->slow, owner);
  if (!bound) return nullptr;
  PyObject* out = PyObject_Vectorcall(bound, args, nargsf, kwnames);
  Py_DECREF(bound);
  return out;
}

int updater_traverse(PyObject* o, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<UpdaterObject*>(o);
  Py_VISIT(self->impl);
  Py_VISIT(self->lock);
  Py_VISIT(self->owner_ref);
  Py_VISIT(self->slow);
  Py_VISIT(Py_TYPE(o));
  return 0;
}

int updater_clear(PyObject* o) {
  auto* self = reinterpret_cast<UpdaterObject*>(o);
  Py_CLEAR(self->impl);
  Py_CLEAR(self->lock);
  Py_CLEAR(self->owner_ref);
  Py_CLEAR(self->slow);
  self->native = nullptr;
  return 0;
}

void updater_dealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  updater_clear(o);
  PyTypeObject* tp = Py_TYPE(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

// rebind(impl): follow a new native structure (after the key type changed); no fast path if None.
PyObject* updater_rebind(PyObject* o, PyObject* impl) {
  auto* self = reinterpret_cast<UpdaterObject*>(o);
  void* native = nullptr;
  UpdateFn fn = nullptr;
  try {
    if (!match_any(impl, native, fn)) fn = nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
    return nullptr;
  }
  Py_INCREF(impl);
  Py_SETREF(self->impl, impl);
  self->native = native;
  self->fn = fn;
  Py_RETURN_NONE;
}

PyMethodDef updater_methods[] = {
    {"rebind", updater_rebind, METH_O, "Follow a new native structure."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef updater_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(UpdaterObject, vectorcall)), READONLY, nullptr},
    {"impl", T_OBJECT, static_cast<Py_ssize_t>(offsetof(UpdaterObject, impl)), READONLY, "the native structure updated"},
    {nullptr, 0, 0, 0, nullptr},
};

PyObject* updater_tp_call(PyObject* o, PyObject* args, PyObject* kwargs) {
  return PyVectorcall_Call(o, args, kwargs);
}

PyType_Slot updater_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(updater_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(updater_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(updater_clear)},
    {Py_tp_call, reinterpret_cast<void*>(updater_tp_call)},
    {Py_tp_members, updater_members},
    {Py_tp_methods, updater_methods},
    {Py_tp_doc, const_cast<char*>("update(item): add one occurrence of item (native fast path).")},
    {0, nullptr},
};

PyType_Spec updater_spec = {"dpsketch._core.Updater", sizeof(UpdaterObject), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, updater_slots};

PyTypeObject* g_lock_type = nullptr;
PyTypeObject* g_updater_type = nullptr;

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
         match<CountSketch<S>>(impl, native, fn, update_str<CountSketch<S>>);
}

// The Updater of the public object `owner`: fast while owner._impl is `impl` (one of the plain
// summary/sketch classes) and owner._key_type_fixed is True; slow(owner, item) otherwise.
py::object make_updater(py::object impl, py::object lock, py::object owner, py::object slow) {
  if (!PyObject_TypeCheck(lock.ptr(), g_lock_type)) throw py::type_error("lock must be an ObjectLock");
  void* native = nullptr;
  UpdateFn fn = nullptr;
  if (!match_any(impl, native, fn)) fn = nullptr;
  PyObject* ref = PyWeakref_NewRef(owner.ptr(), nullptr);
  if (!ref) throw py::error_already_set();
  auto* self = PyObject_GC_New(UpdaterObject, g_updater_type);
  if (!self) {
    Py_DECREF(ref);
    throw py::error_already_set();
  }
  self->vectorcall = updater_call;
  self->impl = impl.release().ptr();
  self->lock = lock.release().ptr();
  self->owner_ref = ref;
  self->slow = slow.release().ptr();
  self->native = native;
  self->fn = fn;
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
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
  g_impl_name = PyUnicode_InternFromString("_impl");
  g_fixed_name = PyUnicode_InternFromString("_key_type_fixed");
  g_lock_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&lock_spec));
  if (!g_lock_type) throw py::error_already_set();
  g_updater_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&updater_spec));
  if (!g_updater_type) throw py::error_already_set();
  m.attr("ObjectLock") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_lock_type));
  m.attr("Updater") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_updater_type));
  m.def("make_updater", &make_updater, py::arg("impl"), py::arg("lock"), py::arg("owner"), py::arg("slow"));
  m.def("int_list_to_array", &int_list_to_array, py::arg("items"));
}
