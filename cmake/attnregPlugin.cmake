# SPDX-License-Identifier: Apache-2.0
# attnreg_add_plugin(TARGET SOURCES src... [OUTPUT_NAME name] [LIBS lib...])
#
# Builds an attnreg backend plugin the way the registry loads it: a MODULE
# library named lib<name>.so, compiled against attnreg::plugin (the plugin
# ABI headers, C or C++), with hidden visibility so that the only exported
# symbol is attn_plugin_entry (ATTN_PLUGIN_DEFINE marks it visible). It does
# not link libattnreg. Write an INI next to it naming `library = lib<name>.so`
# and put its folder in ATTNREG_CONF_PATH (or in <sysconfdir>/attnreg/conf.d).
function(attnreg_add_plugin target)
  cmake_parse_arguments(P "" "OUTPUT_NAME" "SOURCES;LIBS" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "attnreg_add_plugin(${target}): no SOURCES")
  endif()
  if(NOT P_OUTPUT_NAME)
    set(P_OUTPUT_NAME ${target})
  endif()
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE attnreg::plugin ${P_LIBS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME ${P_OUTPUT_NAME}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
endfunction()
