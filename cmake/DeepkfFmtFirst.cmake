# PyTorch's wheels carry fmt headers in LibTorch's include folder. When their version differs from the fmt
# that spdlog was built with, code that includes spdlog meets the wrong fmt and does not compile. This puts
# links to the found fmt's and spdlog's header folders into a folder of the build tree that is searched
# before LibTorch's: links, because a system folder such as /usr/include named with -I or -isystem keeps its
# place at the end of the compiler's search order. DEEPKF_FIRST_INCLUDE_DIRS, when set, replaces this.

# The FMT_VERSION (major * 10000 + minor * 100 + patch) of the fmt headers under `dir`/fmt, or "" if none.
function(deepkf_fmt_header_version dir out)
  set(version "")
  foreach(header base.h core.h)
    if(NOT version AND EXISTS "${dir}/fmt/${header}")
      file(STRINGS "${dir}/fmt/${header}" line REGEX "^#define FMT_VERSION [0-9]+")
      if(line)
        string(REGEX REPLACE "^#define FMT_VERSION ([0-9]+).*" "\\1" version "${line}")
      endif()
    endif()
  endforeach()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

# Sets `out` to `link_dir` after linking `link_dir`/fmt and `link_dir`/spdlog to the folders under
# `fmt_include` and `spdlog_include`, when one of `torch_includes` holds fmt headers of another version than
# `fmt_include`'s; else to "".
function(deepkf_fmt_links torch_includes fmt_include spdlog_include link_dir out)
  set(${out} "" PARENT_SCOPE)
  deepkf_fmt_header_version("${fmt_include}" wanted)
  if(NOT wanted)
    return()
  endif()
  foreach(dir IN LISTS torch_includes)
    deepkf_fmt_header_version("${dir}" theirs)
    if(theirs AND NOT theirs STREQUAL wanted)
      file(MAKE_DIRECTORY "${link_dir}")
      file(REMOVE "${link_dir}/fmt" "${link_dir}/spdlog")
      file(CREATE_LINK "${fmt_include}/fmt" "${link_dir}/fmt" SYMBOLIC)
      if(EXISTS "${spdlog_include}/spdlog")
        file(CREATE_LINK "${spdlog_include}/spdlog" "${link_dir}/spdlog" SYMBOLIC)
      endif()
      set(${out} "${link_dir}" PARENT_SCOPE)
      message(STATUS "deepkf: LibTorch's include folder ${dir} has fmt ${theirs}, spdlog's fmt is ${wanted}: "
                     "${link_dir} (links to ${fmt_include}/fmt and ${spdlog_include}/spdlog) is searched first")
      return()
    endif()
  endforeach()
endfunction()

# The first include folder of an imported target, or "".
function(deepkf_target_include target out)
  set(dir "")
  if(TARGET ${target})
    get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(dirs)
      list(GET dirs 0 dir)
    endif()
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()
