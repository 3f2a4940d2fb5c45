# Install rules: headers, libnnplug, the plugins (nnplug_add_backend), the CMake package.

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
  return()
endif()

include(CMakePackageConfigHelpers)

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

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nnplugConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nnplugConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nnplug)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nnplugConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nnplugConfig.cmake ${PROJECT_BINARY_DIR}/nnplugConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/plugin.map ${PROJECT_SOURCE_DIR}/cmake/nnplugPlugin.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nnplug COMPONENT dev)
