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

# tierzero_add_cuda(<target> <dir>): the CUDA backend (the .cpp and .cu files of <dir>) into the device
# library <target>, with the CUDA runtime (static) and cuBLAS. The top-level CMakeLists enables the
# CUDA language (architectures: CMAKE_CUDA_ARCHITECTURES, default 90). The CUDA sources build with -fmad=false: no contraction into fused
# multiply-adds, so the kernels that repeat the cpu backend's arithmetic give its bits.
function(tierzero_add_cuda target dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp ${dir}/*.cu)
  target_sources(${target} PRIVATE ${srcs})
  set_source_files_properties(${srcs} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false -Xcompiler=-Wall,-Wextra>)
  if(TZ_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  target_compile_definitions(${target} PRIVATE TZ_HAVE_CUDA)
  target_link_libraries(${target} PUBLIC CUDA::cudart_static CUDA::cublas)
endfunction()
