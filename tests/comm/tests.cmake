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
