#include "comm/transport/mpi_check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace tz::mpi {

void fail_mpi_call(const char* call, int code, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw CommError(fmt::format("rank {}: {} failed with {} ({}) at {}:{}", rank, call, code,
                              std::string(text, len), file, line));
}

}  // namespace tz::mpi
