# The Python module built so that a second `pip install .` of the same tree reuses the objects of
# the first (included from CMakeLists.txt under scikit-build-core; DPSKETCH_REUSE_BUILD=OFF builds
# the module directly instead).
#
# pip builds every time in a fresh temporary environment (pybind11, NumPy and often CMake itself
# live there), and scikit-build-core deletes CMakeFiles/ of its build directory, where Ninja keeps
# the object files, whenever that environment moved. So the module is built by a second CMake
# project in <build-dir>/module-build, which scikit-build-core leaves alone, and which sees the
# pybind11 and NumPy headers through copies in <build-dir>/deps that are rewritten only when their
# content changes: same compile commands, same header time stamps, nothing to recompile.

# Copies every file under SRC to DST; an unchanged file is not rewritten (configure_file COPYONLY
# keeps it, time stamp included).
function(_dpsketch_mirror src dst)
  file(GLOB_RECURSE _files RELATIVE "${src}" "${src}/*")
  foreach(_f IN LISTS _files)
    if(NOT _f MATCHES "__pycache__")
      configure_file("${src}/${_f}" "${dst}/${_f}" COPYONLY)
    endif()
  endforeach()
endfunction()

find_package(Python REQUIRED COMPONENTS Interpreter Development.Module NumPy)
find_package(pybind11 CONFIG REQUIRED)

set(_deps "${CMAKE_BINARY_DIR}/deps")
set(_inner "${CMAKE_BINARY_DIR}/module-build")

_dpsketch_mirror("${Python_NumPy_INCLUDE_DIRS}" "${_deps}/numpy/include")
# pybind11's CMake package finds its headers relative to itself (share/cmake/pybind11/../../../include),
# so the pip package's include/ and share/ are copied side by side; any other layout is used in place.
get_filename_component(_pybind11_root "${pybind11_DIR}/../../.." ABSOLUTE)
if(EXISTS "${_pybind11_root}/include/pybind11/pybind11.h"
   AND EXISTS "${_pybind11_root}/share/cmake/pybind11/pybind11Config.cmake")
  _dpsketch_mirror("${_pybind11_root}/include" "${_deps}/pybind11/include")
  _dpsketch_mirror("${_pybind11_root}/share/cmake" "${_deps}/pybind11/share/cmake")
  set(_pybind11_dir "${_deps}/pybind11/share/cmake/pybind11")
else()
  set(_pybind11_dir "${pybind11_DIR}")
endif()

set(_args
  -DDPSKETCH_PYTHON=ON
  "-DDPSKETCH_MODULE_OUTPUT_DIR=${_inner}/module"
  "-Dpybind11_DIR=${_pybind11_dir}"
  "-DPython_EXECUTABLE=${Python_EXECUTABLE}"
  "-DPython_INCLUDE_DIR=${Python_INCLUDE_DIRS}"
  "-DPython_NumPy_INCLUDE_DIR=${_deps}/numpy/include"
  -DPython_FIND_REGISTRY=NEVER)
# The settings that shape the module, as given to this project (cmake.define, CMAKE_ARGS, CC/CXX).
foreach(_var IN ITEMS CMAKE_BUILD_TYPE CMAKE_CXX_COMPILER CMAKE_CXX_FLAGS CMAKE_SHARED_LINKER_FLAGS
                      CMAKE_MODULE_LINKER_FLAGS CMAKE_CXX_COMPILER_LAUNCHER CMAKE_MAKE_PROGRAM
                      CMAKE_OSX_ARCHITECTURES CMAKE_OSX_DEPLOYMENT_TARGET
                      DPSKETCH_NATIVE)
  if(DEFINED ${_var})
    list(APPEND _args "-D${_var}=${${_var}}")
  endif()
endforeach()
if(CMAKE_GENERATOR_PLATFORM)
  list(APPEND _args -A "${CMAKE_GENERATOR_PLATFORM}")
endif()
if(CMAKE_GENERATOR_TOOLSET)
  list(APPEND _args -T "${CMAKE_GENERATOR_TOOLSET}")
endif()

message(STATUS "dpsketch: configuring the module build in ${_inner}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${CMAKE_CURRENT_SOURCE_DIR}" -B "${_inner}" -G "${CMAKE_GENERATOR}" ${_args}
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring the dpsketch module build in ${_inner} failed (see above)")
endif()

add_custom_target(dpsketch_module ALL
  COMMAND "${CMAKE_COMMAND}" --build "${_inner}" --config "$<CONFIG>"
  USES_TERMINAL
  COMMENT "Building the dpsketch module in ${_inner}")
install(DIRECTORY "${_inner}/module/" DESTINATION dpsketch)
