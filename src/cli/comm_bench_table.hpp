// `tierzero bench comm`'s text output in nccl-tests' layout: per group and collective a table with
// nccl-tests' columns and units, size (B), count (elements of the full tensor), type, redop, root,
// then time (us), algbw (GB/s) and busbw (GB/s) of tierzero and of the native MPI collective, and the
// busbw ratio; each table ends with its average busbw and the output with the average over all rows
// ("# Avg bus bandwidth", as nccl-tests ends). GB = 1e9 bytes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tz::cli {

std::string format_comm_bench_table(const nlohmann::json& result);

}  // namespace tz::cli
