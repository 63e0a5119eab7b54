# Real multi-process runs of the communication layer (see mpi_collectives_main.cpp) and smoke runs
# of `tierzero bench comm`. Included by tests/CMakeLists.txt with ${dir} = this folder.
add_executable(tz_mpi_collectives ${dir}/mpi_collectives_main.cpp)
target_link_libraries(tz_mpi_collectives PRIVATE tierzero_core tierzero_mpi)

foreach(np 1 2 3 4 6 8)
  tz_add_mpi_test(NAME comm_mpi_collectives_np${np} NP ${np} TIMEOUT 120 COMMAND $<TARGET_FILE:tz_mpi_collectives>)
endforeach()

# Timeout path: rank 1 skips the second all-gather; ranks 0 and 2 must report it within the 1 s
# timeout and abort the job (no hang). The report is matched; the exit code is the abort's. In the
# ring, rank 2 waits for rank 1 and rank 0 for rank 2 (which is stuck): either report may come first.
tz_add_mpi_test(NAME comm_mpi_timeout_report NP 3 TIMEOUT 60
  COMMAND $<TARGET_FILE:tz_mpi_collectives> --skip-rank 1)
set_tests_properties(comm_mpi_timeout_report PROPERTIES PASS_REGULAR_EXPRESSION
  "all_gather on group 'world' \\(seq 2, rank [02] of 3, world rank [02]\\): timed out after 1 s; not arrived: world rank\\(s\\) \\{[12]\\}")

tz_add_mpi_test(NAME comm_mpi_size_check_report NP 4 TIMEOUT 60 COMMAND $<TARGET_FILE:tz_mpi_collectives> --size-check)
set_tests_properties(comm_mpi_size_check_report PROPERTIES PASS_REGULAR_EXPRESSION
  "size check failed, ranks disagree: world rank\\(s\\) \\{0,2,3\\}: all_reduce count=5 dtype=f32; world rank\\(s\\) \\{1\\}: all_reduce count=6 dtype=f32")

# `tierzero bench comm` smoke runs (tiny sizes): the whole frontier-mini table at 8 ranks as JSON,
# and a text table on 2 ranks of a flat world.
tz_add_mpi_test(NAME comm_bench_frontier_mini_np8 NP 8 TIMEOUT 180
  COMMAND $<TARGET_FILE:tierzero> bench comm --topology frontier-mini --emulate --min-bytes 1024 --max-bytes 4096
          --step-factor 4 --rounds 1 --warmup 1 --iters 2 --format json)
set_tests_properties(comm_bench_frontier_mini_np8 PROPERTIES PASS_REGULAR_EXPRESSION
  "\"group\": \"world-hier\".*\"op\": \"all_reduce\"")
tz_add_mpi_test(NAME comm_bench_flat_np2 NP 2 TIMEOUT 120
  COMMAND $<TARGET_FILE:tierzero> bench comm --topology flat --min-bytes 4096 --max-bytes 4096 --rounds 1
          --warmup 1 --iters 2 --ops all_gather,reduce_scatter --dtype bf16)
set_tests_properties(comm_bench_flat_np2 PROPERTIES PASS_REGULAR_EXPRESSION "group world \\(2 ranks, flat\\), reduce_scatter")
