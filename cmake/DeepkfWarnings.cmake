# Warnings for our own targets only (third-party headers are included as SYSTEM).
add_library(deepkf_warnings INTERFACE)
target_compile_options(deepkf_warnings INTERFACE
  "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wshadow;-Wnon-virtual-dtor;-Wcast-align;-Woverloaded-virtual;-Wpedantic>")

# deepkf_add_library(NAME SOURCES... DEPS ...): one library target per layer.
function(deepkf_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE deepkf_warnings)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
