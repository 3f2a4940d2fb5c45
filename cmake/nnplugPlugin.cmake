# nnplug_add_plugin(<name> SOURCES <files...>) for out-of-tree plugin authors: a MODULE named
# libnnplug-<name>.so, hidden visibility, only nnp_plugin_get_api exported, no libnnplug link.
function(nnplug_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "nnplug plugin name '${name}' must match [a-z0-9_]+")
  endif()
  add_library(nnplug-${name} MODULE ${ARG_SOURCES})
  set_target_properties(nnplug-${name} PROPERTIES PREFIX lib OUTPUT_NAME nnplug-${name}
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(nnplug-${name} PRIVATE nnplug::headers)
  target_link_options(nnplug-${name} PRIVATE
    "LINKER:--version-script=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map" "LINKER:--no-undefined")
endfunction()
