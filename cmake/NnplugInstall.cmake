# Install rules: headers, libnnplug, the plugins (nnplug_add_backend), the CMake package.
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
