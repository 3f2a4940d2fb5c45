# Helpers shared by every nnplug target.

# Warnings are errors on our own code (NNPLUG_WERROR, default ON; OFF for an unknown compiler,
# e.g. on a GPU machine: scripts/gpu-check.sh).
add_library(nnplug_warnings INTERFACE)
target_compile_options(nnplug_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
if(NNPLUG_WERROR)
  target_compile_options(nnplug_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror --Werror=all-warnings>)
endif()

# _nnplug_add_plugin_module(<kind> <name> <target> <map> SOURCES <files...>
#                           [LIBRARIES <targets...>] [PROPERTIES <property value...>])
# The MODULE lib<target>.so behind nnplug_add_backend and nnplug_add_comm_plugin: <name> (the
# <kind>'s name, "backend" or "transport") must match [a-z0-9_]+. Built into
# ${NNPLUG_PLUGIN_OUTPUT_DIR} with hidden C/C++ visibility (and PROPERTIES), RUNPATH $ORIGIN,
# the plugin kit, the version script cmake/<map> (its entry point is the only exported symbol)
# and --no-undefined outside sanitizer builds; installed into ${NNPLUG_PLUGIN_INSTALL_DIR}.
function(_nnplug_add_plugin_module kind name target map)
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "nnplug ${kind} name '${name}' must match [a-z0-9_]+")
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES;PROPERTIES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${target}
    PREFIX lib
    LIBRARY_OUTPUT_DIRECTORY ${NNPLUG_PLUGIN_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN"
    ${ARG_PROPERTIES})
  target_link_libraries(${target} PRIVATE nnplug_plugin_sdk nnplug_warnings ${ARG_LIBRARIES})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/${map}"
    $<$<NOT:$<OR:$<BOOL:${NNPLUG_SANITIZE}>,$<BOOL:${NNPLUG_TSAN}>>>:LINKER:--no-undefined>)
  install(TARGETS ${target} LIBRARY DESTINATION ${NNPLUG_PLUGIN_INSTALL_DIR} COMPONENT runtime)
endfunction()

# nnplug_add_backend(<name> SOURCES <files...> [LIBRARIES <targets...>])
# Builds libnnplug-<name>.so as a MODULE into ${NNPLUG_PLUGIN_OUTPUT_DIR}, with hidden
# visibility and a version script so nnp_plugin_get_api is the only exported symbol.
# Plugins never link libnnplug; --no-undefined catches one that tries.
function(nnplug_add_backend name)
  _nnplug_add_plugin_module(backend "${name}" nnplug-${name} plugin.map ${ARGN}
    PROPERTIES CUDA_VISIBILITY_PRESET hidden)
  set_property(GLOBAL APPEND PROPERTY NNPLUG_BACKENDS ${name})
endfunction()

# nnplug_tristate(<option> <out>): the AUTO/ON/OFF option <option> as AUTO, ON or OFF in <out>
# (CMake's spellings of true and false count as ON and OFF); any other value stops configure.
function(nnplug_tristate option out)
  string(TOUPPER "${${option}}" v)
  if(v MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(v ON)
  elseif(v MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(v OFF)
  elseif(NOT v STREQUAL "AUTO")
    message(FATAL_ERROR "${option} is '${${option}}': expected AUTO, ON or OFF")
  endif()
  set(${out} ${v} PARENT_SCOPE)
endfunction()

# nnplug_add_comm_plugin(<transport> SOURCES <files...> [LIBRARIES <targets...>])
# Builds the communication plugin libnnplug-comm-<transport>.so (nnplug_comm_plugin.h) as a
# MODULE beside the device plugins, with the same flags and RUNPATH; nnp_comm_plugin_get_api
# is its only exported symbol. Device-plugin discovery skips it: "comm-<transport>" is not a
# plugin name ([a-z0-9_]+). Not added to NNPLUG_BACKENDS.
function(nnplug_add_comm_plugin transport)
  _nnplug_add_plugin_module(transport "${transport}" nnplug-comm-${transport} comm_plugin.map
    ${ARGN})
  set_property(TARGET nnplug-comm-${transport} APPEND PROPERTY LINK_DEPENDS
               ${PROJECT_SOURCE_DIR}/cmake/comm_plugin.map)
endfunction()
