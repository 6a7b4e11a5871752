# The C++ library is the first shared library every deepkf program and plugin asks for.
#
# PyTorch's wheels link parts of libstdc++ statically (std::filesystem among them) and export those copies
# from libtorch*.so (pytorch/pytorch#133437; since 2.9 as weak symbols). The dynamic linker binds a call to
# the first definition in load order, and LibTorch comes before libstdc++ on a link line, so a program built
# against a wheel called PyTorch's copies: with PyTorch 2.11 std::filesystem::remove_all and file_size ended
# in a jump to address 0. Naming libstdc++ ahead of everything else (and keeping it even where --as-needed
# would drop it there, before any object needs it) makes its definitions the ones found first. Debian's
# LibTorch exports no such copies; the order changes nothing there. tests/core/stdlib_first checks it with a
# library of its own that exports a wrong std::filesystem::file_size.
function(deepkf_stdlib_first)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    # CUDA too: a target CMake links as CUDA is linked by the host C++ compiler, which takes these flags.
    add_link_options("$<$<LINK_LANGUAGE:CXX,CUDA>:SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state>")
  endif()
endfunction()
