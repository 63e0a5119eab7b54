// Every MPI call goes through TZ_MPI_CHECK: a failure becomes a CommError naming the call, the MPI
// error string, and where it happened. (The world communicator is set to MPI_ERRORS_RETURN.)
#pragma once

#include <mpi.h>

#include <string>

namespace tz::mpi {
[[noreturn]] void fail_mpi_call(const char* call, int code, const char* file, int line);
}  // namespace tz::mpi

#define TZ_MPI_CHECK(call)                                                                          \
  do {                                                                                              \
    int tz_mpi_rc_ = (call);                                                                        \
    if (tz_mpi_rc_ != MPI_SUCCESS) ::tz::mpi::fail_mpi_call(#call, tz_mpi_rc_, __FILE__, __LINE__); \
  } while (0)
