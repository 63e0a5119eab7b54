# The command line in-process (tz_cli_tests links the CLI's object library), and real runs of the
# binary under mpirun that check a failure is reported once.
target_link_libraries(tz_cli_tests PRIVATE tz_cli)
set(TZ_CLI_ONCE ${CMAKE_CURRENT_LIST_DIR}/cli_reported_once.cmake)
set(TZ_CLI_DIR ${CMAKE_BINARY_DIR}/cli-runs)
file(MAKE_DIRECTORY ${TZ_CLI_DIR})
# Every rank reads the same bad config: rank 0 prints the one line, every rank exits 2.
add_test(NAME cli_mpi_bad_config_reported_once_np4 COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_CLI_DIR}/bad.json
  "-DCONTENT={\"optimizer\": {\"type\": \"Lamb\"}}" "-DEXPECT=config .*bad.json: optimizer: key 'type' \"Lamb\" is not supported"
  "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;4;$<TARGET_FILE:tierzero>;train;--config;@FILE@;--steps;1" -P ${TZ_CLI_ONCE})
# A bad option under mpirun: rank 0 prints it (before MPI starts), once.
add_test(NAME cli_mpi_bad_option_reported_once_np3 COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_CLI_DIR}/unused.json -DCONTENT={}
  "-DEXPECT=--steps 0: must be an integer"
  "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;3;$<TARGET_FILE:tierzero>;train;--steps;0" -P ${TZ_CLI_ONCE})
# A run that diverges on every rank together (agreed by a collective): one line, exit 1.
add_test(NAME cli_mpi_diverged_reported_once_np2 COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_CLI_DIR}/nonfinite.json
  "-DCONTENT={\"tierzero\": {\"max_nonfinite_steps\": 0}}" "-DEXPECT=training stopped at step 1" -DCODE=1
  "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;2;$<TARGET_FILE:tierzero>;train;--config;@FILE@;--no-progress;--seq;16;--micro-batch;1;--steps;4;--inject-nan-step;0;--inject-nan-rank;1;--peak-tflops;1" -P ${TZ_CLI_ONCE})
set_tests_properties(cli_mpi_bad_config_reported_once_np4 cli_mpi_bad_option_reported_once_np3
                     cli_mpi_diverged_reported_once_np2 PROPERTIES LABELS "mpi;cli" TIMEOUT 180
  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
# scripts/demo.sh builds only the programs it runs; scripts/test.sh still builds everything.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME cli_demo_builds_only_what_it_runs
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/demo_targets_check.py ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_demo_builds_only_what_it_runs PROPERTIES LABELS cli TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "demo.sh builds and runs exactly")
