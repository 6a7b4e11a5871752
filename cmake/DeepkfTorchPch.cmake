# One precompiled <torch/torch.h> shared by the targets that include it: each copy is about 0.5 GB on disk,
# and a copy per target filled the CI machine's disk.
# GCC uses a PCH only under the -fpic/-fpie setting and the predefined macros it was made with, so the PCH and
# every object that reuses it are compiled -fPIC (position-independent objects link into PIE executables as
# they are) and with our warnings (-Wpedantic undefines __cpp_runtime_arrays). Targets
# compiled with -fopenmp (it defines _OPENMP, which the torch headers test) keep their own PCH.
add_library(deepkf_torch_pch STATIC ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cpp)
target_link_libraries(deepkf_torch_pch PUBLIC ${TORCH_LIBRARIES} PRIVATE deepkf_warnings)
target_compile_options(deepkf_torch_pch PRIVATE -fPIC)
target_precompile_headers(deepkf_torch_pch PRIVATE <torch/torch.h>)

# deepkf_use_torch_pch(TARGET): TARGET's sources see <torch/torch.h> first, from the shared PCH.
function(deepkf_use_torch_pch target)
  target_precompile_headers(${target} REUSE_FROM deepkf_torch_pch)
  target_compile_options(${target} PRIVATE -fPIC)
  target_link_libraries(${target} PRIVATE deepkf_warnings)
endfunction()
