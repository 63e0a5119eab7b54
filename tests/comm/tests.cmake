# Real multi-process runs of the communication layer (see mpi_collectives_main.cpp) and smoke runs
# of `tierzero bench comm`. Included by tests/CMakeLists.txt with ${dir} = this folder.
# The flight-recorder test merges its dumps with `tierzero trace`: building the suite builds the CLI.
add_dependencies(tz_comm_tests tierzero)

add_executable(tz_mpi_collectives ${dir}/mpi_collectives_main.cpp)
target_link_libraries(tz_mpi_collectives PRIVATE tierzero_libs)

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
  "collective check failed: world rank 1 differs from world rank 0: all_reduce count=6 dtype=f32 seq=[0-9]+ group=[0-9a-f]+ vs all_reduce count=5 dtype=f32")

# Nothing left in /dev/shm after a job that fails during the shared-memory set-up at 2 and 4 ranks
# (the last rank stalls past the timeout, throws, or calls abort(); the others time out or are
# killed by mpirun), nor after a `tierzero train` whose --data does not exist (refused on every rank before any
# collective, after the world started); and
# the start-up sweep removes a planted segment of a dead process (check_no_shm_left.sh).
# mpirun's help-message aggregation is off for these jobs: once, with several ranks failing at once,
# Open MPI 4.1's aggregation of their messages failed (ORTE_ERROR_LOG in show_help.c) and mpirun kept
# waiting after the ranks had exited, until the test's timeout; printed one by one, the messages are
# the same and the aggregation path is not taken.
set(no_shm_tests)
foreach(np 2 4)
  math(EXPR last "${np} - 1")
  foreach(failure stall throw abort)
    add_test(NAME comm_mpi_no_shm_left_after_${failure}_in_setup_np${np}
      COMMAND bash ${dir}/check_no_shm_left.sh ${TZ_MPIRUN} ${TZ_MPIRUN_FLAGS} --mca orte_base_help_aggregate 0 -np ${np}
              $<TARGET_FILE:tz_mpi_collectives> --${failure}-in-setup ${last})
    list(APPEND no_shm_tests comm_mpi_no_shm_left_after_${failure}_in_setup_np${np})
  endforeach()
endforeach()
add_test(NAME comm_mpi_no_shm_left_after_train_bad_data
  COMMAND bash ${dir}/check_no_shm_left.sh ${TZ_MPIRUN} ${TZ_MPIRUN_FLAGS} --mca orte_base_help_aggregate 0 -np 2
          $<TARGET_FILE:tierzero> train --data ${CMAKE_BINARY_DIR}/no_such_tokens.bin --steps 2 --no-progress)
set_tests_properties(${no_shm_tests} comm_mpi_no_shm_left_after_train_bad_data
  PROPERTIES TIMEOUT 60 LABELS "mpi" PASS_REGULAR_EXPRESSION "nothing left in /dev/shm"
  FAIL_REGULAR_EXPRESSION "FAILED"
  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0"
  # one at a time: each plants a dead process's segment that the others would otherwise judge
  RESOURCE_LOCK dev_shm_planted_segment)

# `tierzero bench comm` smoke runs (tiny sizes): the whole frontier-mini table at 8 ranks as JSON
# (with the CPU per call beside each time), and a text table on 2 ranks of a flat world.
tz_add_mpi_test(NAME comm_bench_frontier_mini_np8 NP 8 TIMEOUT 180
  COMMAND $<TARGET_FILE:tierzero> bench comm --topology frontier-mini --emulate --min-bytes 1024 --max-bytes 4096
          --step-factor 4 --rounds 1 --warmup 1 --iters 2 --format json)
set_tests_properties(comm_bench_frontier_mini_np8 PROPERTIES PASS_REGULAR_EXPRESSION
  "\"cpu_us\": [0-9].*\"group\": \"world-hier\".*\"op\": \"all_reduce\"")
tz_add_mpi_test(NAME comm_bench_flat_np2 NP 2 TIMEOUT 120
  COMMAND $<TARGET_FILE:tierzero> bench comm --topology flat --min-bytes 4096 --max-bytes 4096 --rounds 1
          --warmup 1 --iters 2 --ops all_gather,reduce_scatter --dtype bf16)
set_tests_properties(comm_bench_flat_np2 PROPERTIES PASS_REGULAR_EXPRESSION "group world \\(2 ranks, flat\\), reduce_scatter")

# Real faults under mpirun, checked from outside by mpi_fault_run.sh (gpt-tiny, 3 ranks, --timeout 2):
# a rank stopped (SIGSTOP) or killed (SIGKILL) while training: every live rank prints the same agreed
# fault report naming it, within the timeout + 5 s, and writes its flight recorder, which `tierzero
# trace` merges; a rank stopped before MPI_Init: the others stop at the start-up deadline.
foreach(mode stop kill before-init)
  add_test(NAME comm_mpi_fault_${mode} COMMAND bash ${dir}/mpi_fault_run.sh ${mode} $<TARGET_FILE:tierzero>
           ${TZ_MPIRUN} ${TZ_MPIRUN_FLAGS})
  set_tests_properties(comm_mpi_fault_${mode} PROPERTIES TIMEOUT 120 LABELS "mpi;faults"
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
endforeach()
# The start-up deadline is range-checked: zero and NaN are errors naming the option.
foreach(bad 0 nan)
  add_test(NAME comm_startup_timeout_rejects_${bad}
           COMMAND $<TARGET_FILE:tierzero> train --steps 1 --startup-timeout ${bad})
  set_tests_properties(comm_startup_timeout_rejects_${bad} PROPERTIES LABELS faults
    PASS_REGULAR_EXPRESSION "--startup-timeout [a-z0-9]+: must be a finite number in \\(0, 86400\\]")
endforeach()
