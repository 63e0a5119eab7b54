# The training command's faults seen from the command line: a metrics file that cannot be written,
# a report to a full standard output, and a SIGTERM to one rank of a real mpirun job.
set(TZ_EXPECT_EXIT ${CMAKE_CURRENT_LIST_DIR}/expect_exit.cmake)
set(TZ_TINY_TRAIN train;--no-progress;--seq;32;--batch;2;--log-every;1)
if(EXISTS /dev/full)
  add_test(NAME train_cli_metrics_dev_full COMMAND ${CMAKE_COMMAND} -DCODE=2
    "-DEXPECT=tierzero: error: --metrics /dev/full: writing failed: No space left on device \\(writing step 1\\)"
    "-DCOMMAND=$<TARGET_FILE:tierzero>;${TZ_TINY_TRAIN};--steps;3;--metrics;/dev/full" -P ${TZ_EXPECT_EXIT})
  add_test(NAME train_cli_metrics_dev_full_mpi_np2 COMMAND ${CMAKE_COMMAND} -DCODE=2
    "-DEXPECT=tierzero: rank 0: error: --metrics /dev/full: writing failed: No space left on device \\(writing step 1\\)"
    "-DCOMMAND=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;2;$<TARGET_FILE:tierzero>;${TZ_TINY_TRAIN};--steps;3;--metrics;/dev/full"
    -P ${TZ_EXPECT_EXIT})
  # A --format json document (or any report) redirected to a full disk: exit 2, not 0.
  add_test(NAME train_cli_plan_json_stdout_dev_full COMMAND ${CMAKE_COMMAND} -DCODE=2 -DSTDOUT=/dev/full
    "-DEXPECT=tierzero: error: writing the standard output failed: No space left on device"
    "-DCOMMAND=$<TARGET_FILE:tierzero>;plan;--topology;frontier-mini;--model;gpt-tiny;--format;json" -P ${TZ_EXPECT_EXIT})
  add_test(NAME train_cli_topology_stdout_dev_full COMMAND ${CMAKE_COMMAND} -DCODE=2 -DSTDOUT=/dev/full
    "-DEXPECT=tierzero: error: writing the standard output failed: No space left on device"
    "-DCOMMAND=$<TARGET_FILE:tierzero>;topology;flat" -P ${TZ_EXPECT_EXIT})
  add_test(NAME train_cli_init_out_dev_full COMMAND ${CMAKE_COMMAND} -DCODE=2
    "-DEXPECT=tierzero: error: --init-out /dev/full: not a regular file \\(a device, FIFO or socket\\)"
    "-DCOMMAND=$<TARGET_FILE:tierzero>;train;--init-out;/dev/full" -P ${TZ_EXPECT_EXIT})
  set_tests_properties(train_cli_init_out_dev_full train_cli_metrics_dev_full train_cli_plan_json_stdout_dev_full
                       train_cli_topology_stdout_dev_full PROPERTIES LABELS train TIMEOUT 120)
  set_tests_properties(train_cli_metrics_dev_full_mpi_np2 PROPERTIES LABELS "mpi;train" TIMEOUT 120
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
endif()
# plan's world size: --nodes and --world-size exclude each other, --nodes 0 is named, and a world
# that would not fit an int is an error, not a wrap-around to 8 ranks.
add_test(NAME train_cli_plan_nodes_overflow COMMAND ${CMAKE_COMMAND} -DCODE=2
  "-DEXPECT=tierzero: error: --nodes 536870913: must be an integer in \\[1, 1048576\\]"
  "-DCOMMAND=$<TARGET_FILE:tierzero>;plan;--topology;frontier;--nodes;536870913" -P ${TZ_EXPECT_EXIT})
add_test(NAME train_cli_plan_nodes_and_world_size COMMAND ${CMAKE_COMMAND} -DCODE=2
  "-DEXPECT=tierzero: error: --nodes excludes --world-size"
  "-DCOMMAND=$<TARGET_FILE:tierzero>;plan;--topology;frontier;--nodes;2;--world-size;8" -P ${TZ_EXPECT_EXIT})
add_test(NAME train_cli_plan_nodes_zero COMMAND ${CMAKE_COMMAND} -DCODE=2
  "-DEXPECT=tierzero: error: --nodes 0: must be an integer in \\[1, "
  "-DCOMMAND=$<TARGET_FILE:tierzero>;plan;--topology;frontier;--nodes;0" -P ${TZ_EXPECT_EXIT})
set_tests_properties(train_cli_plan_nodes_overflow train_cli_plan_nodes_and_world_size train_cli_plan_nodes_zero
                     PROPERTIES LABELS train TIMEOUT 60)
# SIGTERM to rank 1 of 3 during training: every rank stops at the same step, exit code 5.
string(REPLACE ";" " " TZ_MPIRUN_FLAGS_WORDS "${TZ_MPIRUN_FLAGS}")
add_test(NAME train_mpi_sigterm_one_rank_np3 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sigterm_one_rank.sh
  ${TZ_MPIRUN} "${TZ_MPIRUN_FLAGS_WORDS}" 3 1 $<TARGET_FILE:tierzero> --no-progress --seq 32 --batch 2 --log-every 1
  --steps 100000 --plan zero3 --threads 1)
set_tests_properties(train_mpi_sigterm_one_rank_np3 PROPERTIES LABELS "mpi;train" TIMEOUT 200
  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
# --plan auto end to end: 4 ranks under mpirun on an emulated 2-node topology, the tiny model, three
# steps; the planner's top three, why the first won, then training with it. And plan --emit-config
# handed to train --config builds the emitted plan.
set(TZ_FOUR ${TZ_TEST_DATA_DIR}/topology_four_ranks.json)
tz_add_mpi_test(NAME train_mpi_plan_auto_np4 NP 4 TIMEOUT 300 COMMAND $<TARGET_FILE:tierzero> train --no-progress
  --seq 32 --batch 2 --grad-accum 2 --log-every 1 --steps 3 --topology ${TZ_FOUR} --emulate --plan auto)
set_tests_properties(train_mpi_plan_auto_np4 PROPERTIES
  PASS_REGULAR_EXPRESSION "plan auto: [0-9]+ consistent plans.*why the first: .*as configuration.*done: final loss")
add_test(NAME train_cli_plan_auto_no_peak COMMAND $<TARGET_FILE:tierzero> train --no-progress --steps 1 --plan auto)
set_tests_properties(train_cli_plan_auto_no_peak PROPERTIES LABELS train TIMEOUT 60
  PASS_REGULAR_EXPRESSION "peak_tflops")
set(TZ_EMIT_DIR ${CMAKE_BINARY_DIR}/train-emit-config)
file(MAKE_DIRECTORY ${TZ_EMIT_DIR})
add_test(NAME train_mpi_emit_config_round_trip COMMAND ${CMAKE_COMMAND} -DFILE=${TZ_EMIT_DIR}/plan.json
  "-DPLAN=$<TARGET_FILE:tierzero>;plan;--topology;${TZ_FOUR};--world-size;4;--model;gpt-tiny;--micro-batch;2;--emit-config"
  "-DTRAIN=${TZ_MPIRUN};${TZ_MPIRUN_FLAGS};-np;4;$<TARGET_FILE:tierzero>;train;--config;@FILE@;--topology;${TZ_FOUR};--emulate;--print-plan"
  -P ${CMAKE_CURRENT_LIST_DIR}/emit_then_train.cmake)
set_tests_properties(train_mpi_emit_config_round_trip PROPERTIES LABELS "mpi;train" TIMEOUT 300
  ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0")
