# NnplugCudaLibs.cmake — finds cuBLAS and cuDNN for the cuda backend.
#
# The backend compiles against their headers and opens the libraries with dlopen at run time
# (plugins/cuda_libs/library_search.cpp), so the headers are REQUIRED (configure fails without them) and
# the library file is only looked for to tell the user and to give the run-time search a last
# folder to try (the "build" step of NNPLUG_CUDA_LIB_SEARCH, docs/cuda-backend.md).
#
# Where it looks, in order:
#   1. <ROOT_VAR> given as a CMake variable or an environment variable (e.g. -DCUDNN_ROOT=/opt/cudnn
#      or CUDNN_ROOT=/opt/cudnn), with include/ and lib/ or lib64/ below it;
#   2. the CUDA toolkit (CUDAToolkit_INCLUDE_DIRS, CUDAToolkit_LIBRARY_DIR);
#   3. Python wheels (nvidia-cudnn-cu13, nvidia-cublas): site-packages/nvidia/<subdir>/include and
#      .../lib, asking `python3` and `/usr/bin/python3` where the `nvidia` package lives;
#   4. CMake's default prefixes.
# Library names include the versioned sonames (libcudnn.so.9, libcublas.so.13): wheels ship no
# unversioned libcudnn.so / libcublas.so.

# The folders holding Python's `nvidia` namespace package (wheels such as nvidia-cudnn-cu13 put
# their files below it), for every interpreter that answers. Cached in NNPLUG_PIP_NVIDIA_DIRS.
function(nnplug_pip_nvidia_dirs out)
  get_property(_done GLOBAL PROPERTY NNPLUG_PIP_NVIDIA_DIRS_DONE)
  if(_done)
    get_property(_dirs GLOBAL PROPERTY NNPLUG_PIP_NVIDIA_DIRS)
    set(${out} "${_dirs}" PARENT_SCOPE)
    return()
  endif()
  set(_script [=[
import os, site, sys
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
roots += [os.path.join(d, "nvidia") for d in dirs]
seen = []
for r in roots:
    r = os.path.realpath(r)
    if os.path.isdir(r) and r not in seen:
        seen.append(r)
print(";".join(seen))
]=])
  set(_dirs "")
  set(_pythons python3 /usr/bin/python3)
  if(DEFINED ENV{PYTHON})
    list(PREPEND _pythons "$ENV{PYTHON}")
  endif()
  foreach(_py IN LISTS _pythons)
    find_program(_nnplug_py_path NAMES ${_py} NO_CACHE)
    if(_nnplug_py_path)
      execute_process(COMMAND ${_nnplug_py_path} -c "${_script}"
                      OUTPUT_VARIABLE _found OUTPUT_STRIP_TRAILING_WHITESPACE
                      ERROR_QUIET RESULT_VARIABLE _rc TIMEOUT 30)
      if(_rc EQUAL 0 AND _found)
        list(APPEND _dirs ${_found})
      endif()
    endif()
    unset(_nnplug_py_path)
  endforeach()
  list(REMOVE_DUPLICATES _dirs)
  set_property(GLOBAL PROPERTY NNPLUG_PIP_NVIDIA_DIRS "${_dirs}")
  set_property(GLOBAL PROPERTY NNPLUG_PIP_NVIDIA_DIRS_DONE TRUE)
  if(_dirs)
    message(STATUS "nnplug: Python nvidia package folders: ${_dirs}")
  endif()
  set(${out} "${_dirs}" PARENT_SCOPE)
endfunction()

# nnplug_find_cuda_library(<PREFIX> [OPTIONAL] TITLE <text> HEADER <file> NAMES <names...>
#                          PIP_SUBDIRS <subdirs of nvidia/...> ROOT_VARS <vars...>)
# Sets the cache variables <PREFIX>_INCLUDE_DIR and <PREFIX>_LIBRARY (may be NOTFOUND), and
# <PREFIX>_LIBRARY_DIR (the library's folder, or empty) in the caller's scope. A missing header
# is a FATAL_ERROR that says where it looked and how to point at it; with OPTIONAL it is the
# caller's to report instead: <PREFIX>_TRIED holds the folders looked in, and nothing is printed.
function(nnplug_find_cuda_library prefix)
  cmake_parse_arguments(ARG "OPTIONAL" "TITLE;HEADER" "NAMES;PIP_SUBDIRS;ROOT_VARS" ${ARGN})
  set(_roots "")
  foreach(_v IN LISTS ARG_ROOT_VARS)
    if(${_v})
      list(APPEND _roots "${${_v}}")
    endif()
    if(DEFINED ENV{${_v}} AND NOT "$ENV{${_v}}" STREQUAL "")
      list(APPEND _roots "$ENV{${_v}}")
    endif()
  endforeach()
  nnplug_pip_nvidia_dirs(_pip_roots)
  set(_pip_inc "")
  set(_pip_lib "")
  foreach(_r IN LISTS _pip_roots)
    foreach(_s IN LISTS ARG_PIP_SUBDIRS)
      list(APPEND _pip_inc "${_r}/${_s}/include")
      list(APPEND _pip_lib "${_r}/${_s}/lib")
    endforeach()
  endforeach()

  # HINTS come before CMake's default prefixes, in this order.
  find_path(${prefix}_INCLUDE_DIR ${ARG_HEADER}
    HINTS ${_roots} ${CUDAToolkit_INCLUDE_DIRS} ${_pip_inc}
    PATH_SUFFIXES include
    DOC "${ARG_TITLE} include folder (holding ${ARG_HEADER})")
  find_library(${prefix}_LIBRARY
    NAMES ${ARG_NAMES} NAMES_PER_DIR
    HINTS ${_roots} ${CUDAToolkit_LIBRARY_DIR} ${_pip_lib}
    PATH_SUFFIXES lib lib64
    DOC "${ARG_TITLE} library (opened with dlopen at run time; its folder is the last one tried)")

  set(_dir "")
  if(${prefix}_LIBRARY)
    get_filename_component(_dir "${${prefix}_LIBRARY}" DIRECTORY)
  endif()
  set(${prefix}_LIBRARY_DIR "${_dir}" PARENT_SCOPE)
  set(_tried ${_roots} ${CUDAToolkit_INCLUDE_DIRS} ${_pip_inc})
  if(NOT _pip_inc)
    list(APPEND _tried "no Python nvidia package (asked python3, /usr/bin/python3, $PYTHON)")
  endif()
  string(REPLACE ";" ", " _tried "${_tried}")
  set(${prefix}_TRIED "${_tried}" PARENT_SCOPE)
  if(ARG_OPTIONAL)
    return()
  endif()
  if(NOT ${prefix}_INCLUDE_DIR)
    list(GET ARG_ROOT_VARS 0 _root_var)
    message(FATAL_ERROR
      "nnplug: the CUDA backend was requested (NNPLUG_WITH_CUDA=ON and nvcc was found) but "
      "${ARG_TITLE}'s header ${ARG_HEADER} was not found.\n"
      "Looked in: ${_tried}; and CMake's default prefixes.\n"
      "Install ${ARG_TITLE} (the CUDA toolkit package, or the Python wheel), point "
      "-D${_root_var}=<prefix> (or the environment variable ${_root_var}) at a folder with "
      "include/${ARG_HEADER}, or configure with -DNNPLUG_WITH_CUDA=OFF to build without the "
      "CUDA backend.")
  endif()
  if(${prefix}_LIBRARY)
    message(STATUS "nnplug: ${ARG_TITLE}: headers in ${${prefix}_INCLUDE_DIR}, library "
                   "${${prefix}_LIBRARY} (opened at run time)")
  else()
    list(GET ARG_NAMES -1 _soname)
    message(STATUS "nnplug: ${ARG_TITLE}: headers in ${${prefix}_INCLUDE_DIR}; no library found "
                   "at configure time: the plugin looks for ${_soname} at run time "
                   "(docs/cuda-backend.md)")
  endif()
endfunction()
