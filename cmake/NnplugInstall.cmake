# Install rules: headers (DLPack's included), libnnplug, the plugins (nnplug_add_backend), the
# CMake package, nnplug.pc. docs/install.md describes the install tree.

if(SKBUILD)
  # `pip install .` (pyproject.toml, scikit-build-core): the install prefix is the package
  # folder nnplug/ of the wheel (wheel.install-dir), which gets libnnplug here and the plugins
  # through nnplug_add_backend: nnplug/lib/libnnplug.so.0, nnplug/lib/nnplug/plugins/. A wheel
  # is a zip file and stores a symlink as a second copy, so libnnplug goes in once, as the file
  # named by its soname (no VERSION: no libnnplug.so.X.Y.Z, NAMELINK_SKIP: no libnnplug.so).
  # The headers and the CMake package serve C/C++ consumers of `cmake --install` only.
  set_property(TARGET nnplug PROPERTY VERSION)
  install(TARGETS nnplug LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP
          COMPONENT runtime)
  # `auditwheel repair` (scripts/python-package-test.sh) copies the libraries the cpu plugin
  # links into the wheel (OpenBLAS, oneTBB and the GCC Fortran runtime OpenBLAS needs): their
  # licence texts go with them, as nnplug/licenses/<package>.copyright, from the Debian
  # packages that provide them (a build elsewhere names its own with NNPLUG_BUNDLED_LICENSES,
  # a list of files).
  if(NNPLUG_WITH_CPU)
    file(GLOB _nnplug_bundled_default /usr/share/doc/libopenblas0*/copyright
         /usr/share/doc/libtbb12/copyright /usr/share/doc/libgfortran5/copyright)
    set(NNPLUG_BUNDLED_LICENSES "${_nnplug_bundled_default}" CACHE STRING
        "licence files of the libraries a repaired wheel bundles")
    foreach(_lic IN LISTS NNPLUG_BUNDLED_LICENSES)
      get_filename_component(_pkg "${_lic}" DIRECTORY)
      get_filename_component(_pkg "${_pkg}" NAME)
      install(FILES "${_lic}" DESTINATION licenses RENAME "${_pkg}.copyright"
              COMPONENT runtime)
    endforeach()
    if(NOT NNPLUG_BUNDLED_LICENSES)
      message(WARNING "no licence files found for the libraries a repaired wheel bundles: "
                      "set NNPLUG_BUNDLED_LICENSES")
    endif()
  endif()
  return()
endif()

include(CMakePackageConfigHelpers)

# DLPack: nnplug's public headers include <dlpack/dlpack.h>, a header-only dependency. The copy
# the build compiled against (DLPACK_INCLUDE_DIR) is installed beside nnplug's headers, as
# <includedir>/dlpack/dlpack.h, so that a consumer of the install tree needs no DLPack of its own
# (the CMake package and nnplug.pc point at <includedir> only), with DLPack's licence in
# <docdir>/dlpack/ (share/doc/nnplug/dlpack): LICENSE, the full Apache-2.0 text, and, when the
# header comes from a Debian package, that package's copyright file. DLPACK_LICENSE_FILE and
# DLPACK_COPYRIGHT_FILE name them where the search below does not find them.
# NNPLUG_INSTALL_DLPACK=OFF leaves DLPack out (for a distribution that packages it separately,
# e.g. Debian's libdlpack-dev): consumers then need DLPack's folder themselves.
option(NNPLUG_INSTALL_DLPACK
       "Install the dlpack/dlpack.h nnplug was built with, and its licence" ON)
if(NNPLUG_INSTALL_DLPACK)
  get_filename_component(_nnplug_dlpack_prefix "${DLPACK_INCLUDE_DIR}/.." ABSOLUTE)
  # The full licence text: an upstream checkout's LICENSE (<dlpack>/include/dlpack/dlpack.h,
  # <dlpack>/LICENSE), a distribution's licence folder, or, for Debian's libdlpack-dev, whose
  # copyright file refers to it, the system's copy of the Apache-2.0 text.
  find_file(DLPACK_LICENSE_FILE NAMES LICENSE Apache-2.0
    PATHS "${_nnplug_dlpack_prefix}" "${_nnplug_dlpack_prefix}/share/licenses/dlpack"
          "${_nnplug_dlpack_prefix}/share/doc/dlpack"
          "${_nnplug_dlpack_prefix}/share/common-licenses"
    NO_DEFAULT_PATH DOC "DLPack's licence text (Apache-2.0), installed with dlpack.h")
  find_file(DLPACK_COPYRIGHT_FILE NAMES copyright
    PATHS "${_nnplug_dlpack_prefix}/share/doc/libdlpack-dev" NO_DEFAULT_PATH
    DOC "The copyright file of the package that provides dlpack.h (optional), installed with it")
  # Without it the build goes on, and `cmake --install` stops with the message below.
  if(NOT DLPACK_LICENSE_FILE)
    set(_nnplug_msg "nnplug installs ${DLPACK_INCLUDE_DIR}/dlpack/dlpack.h and needs its licence "
      "text (Apache-2.0) beside it, which was not found near ${_nnplug_dlpack_prefix}: configure "
      "with -DDLPACK_LICENSE_FILE=<path of DLPack's LICENSE>, or with -DNNPLUG_INSTALL_DLPACK=OFF")
    string(JOIN "" _nnplug_msg ${_nnplug_msg})
    message(WARNING "${_nnplug_msg}")
    install(CODE "message(FATAL_ERROR \"${_nnplug_msg}\")" COMPONENT dev)
  else()
    file(STRINGS "${DLPACK_LICENSE_FILE}" _nnplug_apache REGEX "Apache License" LIMIT_COUNT 1)
    file(STRINGS "${DLPACK_LICENSE_FILE}" _nnplug_terms
         REGEX "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" LIMIT_COUNT 1)
    if(NOT _nnplug_apache OR NOT _nnplug_terms)
      message(FATAL_ERROR "DLPACK_LICENSE_FILE=${DLPACK_LICENSE_FILE} is not the full text of the "
                          "Apache License 2.0 (DLPack's licence)")
    endif()
    install(FILES "${DLPACK_LICENSE_FILE}" DESTINATION ${CMAKE_INSTALL_DOCDIR}/dlpack
            RENAME LICENSE COMPONENT dev)
    if(DLPACK_COPYRIGHT_FILE)
      install(FILES "${DLPACK_COPYRIGHT_FILE}" DESTINATION ${CMAKE_INSTALL_DOCDIR}/dlpack
              RENAME copyright COMPONENT dev)
    endif()
  endif()
  install(FILES "${DLPACK_INCLUDE_DIR}/dlpack/dlpack.h"
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dlpack COMPONENT dev)
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/api/include/nnplug
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/api/include/nnplug/nnplug_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nnplug COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugins/kit/include/nnplug/kit
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nnplug COMPONENT dev FILES_MATCHING PATTERN "*.hpp")
install(TARGETS nnplug nnplug_headers nnplug_plugin_sdk EXPORT nnplugTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT nnplugTargets NAMESPACE nnplug:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nnplug
        COMPONENT dev)

set(NNPLUG_INCLUDE_INSTALL_DIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nnplugConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nnplugConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nnplug
  PATH_VARS NNPLUG_INCLUDE_INSTALL_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nnplugConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nnplugConfig.cmake ${PROJECT_BINARY_DIR}/nnplugConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/plugin.map ${PROJECT_SOURCE_DIR}/cmake/nnplugPlugin.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nnplug COMPONENT dev)

# nnplug.pc (cmake/nnplug.pc.in) for pkg-config: Cflags -I<includedir> (dlpack/dlpack.h is there
# too; with NNPLUG_INSTALL_DLPACK=OFF, DLPack's folder where it is not a default of the
# compiler), Libs -L<libdir> -lnnplug; plugindir, the folder of the default plugins. The prefix
# is the one `cmake --install` installs to (its --prefix, else CMAKE_INSTALL_PREFIX), written
# at install time: the template is configured here with @NNPLUG_PC_PREFIX@ left for that step.
set(NNPLUG_PC_PREFIX "@NNPLUG_PC_PREFIX@")
foreach(_nnplug_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_nnplug_dir}}")
    set(NNPLUG_PC_${_nnplug_dir} "${CMAKE_INSTALL_${_nnplug_dir}}")
  else()
    set(NNPLUG_PC_${_nnplug_dir} "\${prefix}/${CMAKE_INSTALL_${_nnplug_dir}}")
  endif()
endforeach()
set(NNPLUG_PC_DLPACK_CFLAGS "")
if(NOT NNPLUG_INSTALL_DLPACK)
  get_filename_component(_nnplug_dlpack "${DLPACK_INCLUDE_DIR}" REALPATH)
  set(_nnplug_implicit)
  foreach(_nnplug_dir IN LISTS CMAKE_C_IMPLICIT_INCLUDE_DIRECTORIES)
    get_filename_component(_nnplug_dir "${_nnplug_dir}" REALPATH)
    list(APPEND _nnplug_implicit "${_nnplug_dir}")
  endforeach()
  if(NOT _nnplug_dlpack IN_LIST _nnplug_implicit)
    set(NNPLUG_PC_DLPACK_CFLAGS " -I${DLPACK_INCLUDE_DIR}")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/nnplug.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/nnplug.pc.in
               @ONLY)
install(CODE "
  get_filename_component(NNPLUG_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/nnplug.pc.in\"
                 \"${PROJECT_BINARY_DIR}/pkgconfig/nnplug.pc\" @ONLY)" COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/nnplug.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
