# One function per optional backend (ggml's ggml_add_backend pattern): the core library knows
# nothing of MPI or BLAS; a backend library is created here and linked by those who need it.

# tierzero_add_mpi(<name> <sources...>): a library holding the MPI transport, linked to the core.
function(tierzero_add_mpi name)
  find_package(MPI REQUIRED COMPONENTS CXX)
  add_library(${name} STATIC ${ARGN})
  target_link_libraries(${name} PUBLIC tz_comm MPI::MPI_CXX)
  # Open MPI's C++ headers are noisy under -Wextra.
  target_compile_options(${name} PRIVATE -Wno-cast-function-type)
endfunction()

# tierzero_add_blas(<target>): link a CBLAS implementation (OpenBLAS from Debian by default).
function(tierzero_add_blas target)
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS REQUIRED)
  find_path(TZ_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas openblas-pthread REQUIRED)
  target_include_directories(${target} PUBLIC ${TZ_CBLAS_INCLUDE})
  target_link_libraries(${target} PUBLIC ${BLAS_LIBRARIES})
endfunction()
