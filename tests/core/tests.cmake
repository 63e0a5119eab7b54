# The strict JSON reader seen from the command line: bad files made at run time, run as a user would
# (one process and under mpirun), must fail with exit code 2 and one line naming the file and key.
set(TZ_BAD_JSON ${CMAKE_CURRENT_LIST_DIR}/cli_bad_json.cmake)
set(TZ_BAD_DIR ${CMAKE_BINARY_DIR}/core-cli-bad-json)
file(MAKE_DIRECTORY ${TZ_BAD_DIR})
add_test(NAME core_cli_train_deep_config COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_BAD_DIR}/train-deep.json -DCONTENT=deep
  "-DEXPECT=config .*train-deep.json: arrays/objects nested deeper than 128 levels"
  "-DCOMMAND=$<TARGET_FILE:tierzero>;train;--config;@FILE@;--steps;1" -P ${TZ_BAD_JSON})
add_test(NAME core_cli_plan_deep_topology COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_BAD_DIR}/plan-deep.json -DCONTENT=deep
  "-DEXPECT=topology .*plan-deep.json: arrays/objects nested deeper than 128 levels"
  "-DCOMMAND=$<TARGET_FILE:tierzero>;plan;--topology;@FILE@;--world-size;8" -P ${TZ_BAD_JSON})
add_test(NAME core_cli_train_duplicate_key COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_BAD_DIR}/train-dup.json -DCONTENT=duplicate
  "-DEXPECT=config .*train-dup.json: duplicate key 'gradient_clipping'"
  "-DCOMMAND=$<TARGET_FILE:tierzero>;train;--config;@FILE@;--steps;1" -P ${TZ_BAD_JSON})
set_tests_properties(core_cli_train_deep_config core_cli_plan_deep_topology core_cli_train_duplicate_key
                     PROPERTIES LABELS core TIMEOUT 120)
# Under mpirun: every rank reads the config and says the same one line; the job exits 2.
add_test(NAME core_cli_train_range_mpi_np2 COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_BAD_DIR}/train-range.json -DCONTENT=range
  "-DEXPECT=config .*train-range.json: key 'optimizer.params.lr': number 1e400 is out of range"
  "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;2;$<TARGET_FILE:tierzero>;train;--config;@FILE@;--steps;1"
  -P ${TZ_BAD_JSON})
add_test(NAME core_cli_train_deep_mpi_np2 COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_BAD_DIR}/train-deep-mpi.json -DCONTENT=deep
  "-DEXPECT=config .*train-deep-mpi.json: arrays/objects nested deeper than 128 levels"
  "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;2;$<TARGET_FILE:tierzero>;train;--config;@FILE@;--steps;1"
  -P ${TZ_BAD_JSON})
set_tests_properties(core_cli_train_range_mpi_np2 core_cli_train_deep_mpi_np2 PROPERTIES LABELS "mpi;core" TIMEOUT 120
  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
