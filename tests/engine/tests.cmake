# Long engine runs (hundreds of training steps): their own binary, labelled `slow`, so the
# sanitizer pass (which runs everything else) skips them; the Release pass runs them.
file(GLOB TZ_ENGINE_SLOW_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_slowtest.cpp)
add_executable(tz_engine_slow_tests ${TZ_ENGINE_SLOW_TESTS})
target_link_libraries(tz_engine_slow_tests PRIVATE tierzero_libs GTest::gtest GTest::gtest_main)
gtest_discover_tests(tz_engine_slow_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 900 LABELS slow)  # one label: a list would be split by gtest_discover_tests

# Real multi-process training runs of the binary (tiny model, a few steps), and its error paths:
# each must finish (or fail with the named message) well within the timeout, never hang.
set(TZ_TRAIN $<TARGET_FILE:tierzero> train --no-progress --seq 32 --batch 2 --log-every 1)
set(TZ_CFG ${CMAKE_CURRENT_LIST_DIR}/configs)
tz_add_mpi_test(NAME train_mpi_three_level_np8 NP 8 COMMAND ${TZ_TRAIN} --steps 3 --topology frontier-mini --emulate --plan three-level)
set_tests_properties(train_mpi_three_level_np8 PROPERTIES PASS_REGULAR_EXPRESSION "done: final loss")
foreach(family llama neox)  # Hugging Face configs of the other families, sharded the same way
  tz_add_mpi_test(NAME train_mpi_${family}_three_level_np8 NP 8 COMMAND ${TZ_TRAIN} --steps 3 --topology frontier-mini
                  --emulate --plan three-level --model ${CMAKE_CURRENT_LIST_DIR}/../model/configs/tiny_${family}_hf.json)
  set_tests_properties(train_mpi_${family}_three_level_np8 PROPERTIES PASS_REGULAR_EXPRESSION "done: final loss")
endforeach()
tz_add_mpi_test(NAME train_mpi_zeropp_deepspeed_np8 NP 8 COMMAND ${TZ_TRAIN} --config ${TZ_CFG}/zeropp_ds.json --topology frontier-mini --emulate)
set_tests_properties(train_mpi_zeropp_deepspeed_np8 PROPERTIES PASS_REGULAR_EXPRESSION "plan zeropp.*done: final loss")
tz_add_mpi_test(NAME train_mpi_zero3_fp32_np3 NP 3 COMMAND ${TZ_TRAIN} --steps 2 --plan zero3 --fp32)
set_tests_properties(train_mpi_zero3_fp32_np3 PROPERTIES PASS_REGULAR_EXPRESSION "done: final loss")
tz_add_mpi_test(NAME train_mpi_unknown_key NP 2 COMMAND ${TZ_TRAIN} --config ${TZ_CFG}/unknown_key.json)
set_tests_properties(train_mpi_unknown_key PROPERTIES PASS_REGULAR_EXPRESSION "offload_optimizer: key 'device' .cpu. is not supported")
tz_add_mpi_test(NAME train_mpi_bad_plan NP 8 COMMAND ${TZ_TRAIN} --config ${TZ_CFG}/bad_plan.json --topology frontier-mini --emulate)
set_tests_properties(train_mpi_bad_plan PROPERTIES PASS_REGULAR_EXPRESSION "W_bwd")
tz_add_mpi_test(NAME train_mpi_topology_mismatch NP 6 COMMAND ${TZ_TRAIN} --steps 1 --topology frontier-mini --emulate)
set_tests_properties(train_mpi_topology_mismatch PROPERTIES PASS_REGULAR_EXPRESSION "multiply to 8 ranks, but the world has 6")
tz_add_mpi_test(NAME train_mpi_hosts_need_emulate NP 8 COMMAND ${TZ_TRAIN} --steps 1 --topology frontier-mini)
set_tests_properties(train_mpi_hosts_need_emulate PROPERTIES PASS_REGULAR_EXPRESSION "--emulate")
tz_add_mpi_test(NAME train_mpi_nan_skips_together NP 4 COMMAND ${TZ_TRAIN} --steps 3 --plan zero3 --inject-nan-step 1 --inject-nan-rank 3)
set_tests_properties(train_mpi_nan_skips_together PROPERTIES PASS_REGULAR_EXPRESSION "SKIPPED.*1 skipped steps")
tz_add_mpi_test(NAME train_mpi_three_level_flat_np8 NP 8 COMMAND ${TZ_TRAIN} --config ${TZ_CFG}/three_level_flat.json --topology frontier-mini --emulate)
set_tests_properties(train_mpi_three_level_flat_np8 PROPERTIES PASS_REGULAR_EXPRESSION "collectives flat.*done: final loss")
