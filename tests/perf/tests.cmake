# CLI runs of the cost model: the plan table (presets and search) and a small sweep without charts.
add_test(NAME perf_cli_plan COMMAND tierzero plan --topology frontier --nodes 2 --model gpt-20b --top 3)
add_test(NAME perf_cli_plan_json COMMAND tierzero plan --topology frontier-mini --model gpt-tiny --format json)
add_test(NAME perf_cli_simulate COMMAND tierzero simulate --topology frontier --model gpt-20b --nodes 1 2
         --no-charts --out ${CMAKE_BINARY_DIR}/perf-simulate-test)
add_test(NAME perf_cli_bad_model COMMAND tierzero plan --model /no/such/model.json)
add_test(NAME perf_cli_simulate_flat COMMAND tierzero simulate --topology frontier-mini --model gpt-tiny --nodes 2
         --collectives flat --sim-check --no-charts --out ${CMAKE_BINARY_DIR}/perf-simulate-flat-test)
add_test(NAME perf_cli_bad_collectives COMMAND tierzero plan --collectives ring)
set_tests_properties(perf_cli_simulate_flat PROPERTIES LABELS perf TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "zero3 +world +[0-9]")
set_tests_properties(perf_cli_bad_collectives PROPERTIES LABELS perf TIMEOUT 30 WILL_FAIL TRUE)
set_tests_properties(perf_cli_bad_model PROPERTIES WILL_FAIL TRUE)
set_tests_properties(perf_cli_plan perf_cli_plan_json perf_cli_simulate perf_cli_bad_model PROPERTIES LABELS perf TIMEOUT 120)
# plan --explain: per collective and tier, adding up to the step; simulate --busbw: the model's flat-ring busbw.
add_test(NAME perf_cli_explain COMMAND tierzero plan --topology frontier --nodes 48 --model gpt-20b --explain zeropp
         --collectives flat --runtime deepspeed)
add_test(NAME perf_cli_explain_json COMMAND tierzero plan --topology frontier-mini --model gpt-tiny --explain three-level
         --boundary pipelined --format json)
add_test(NAME perf_cli_explain_unknown COMMAND tierzero plan --topology frontier-mini --model gpt-tiny --explain zero4)
add_test(NAME perf_cli_busbw COMMAND tierzero simulate --topology frontier --busbw reduce_scatter --nodes 1 2 48
         --runtime deepspeed --out ${CMAKE_BINARY_DIR}/perf-busbw-test)
add_test(NAME perf_cli_bad_runtime COMMAND tierzero plan --runtime megatron)
add_test(NAME perf_cli_prefetch0 COMMAND tierzero plan --topology frontier-mini --model gpt-tiny --prefetch 0 --top 1)
set_tests_properties(perf_cli_explain PROPERTIES LABELS perf TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "check: compute \\+ kernels \\+ optimizer \\+ exposed")
set_tests_properties(perf_cli_explain_json PROPERTIES LABELS perf TIMEOUT 60 PASS_REGULAR_EXPRESSION "\"boundary\": \"pipelined\"")
set_tests_properties(perf_cli_busbw PROPERTIES LABELS perf TIMEOUT 60 PASS_REGULAR_EXPRESSION "384 +[0-9.]+m")
set_tests_properties(perf_cli_explain_unknown perf_cli_bad_runtime PROPERTIES LABELS perf TIMEOUT 30 WILL_FAIL TRUE)
set_tests_properties(perf_cli_prefetch0 PROPERTIES LABELS perf TIMEOUT 60)
# The other architectures price as their exact models (docs/model.md): the header names family and count.
add_test(NAME perf_cli_plan_llama COMMAND tierzero plan --topology frontier --nodes 4 --model llama-3-8b --top 1)
add_test(NAME perf_cli_plan_hf_config COMMAND tierzero plan --topology frontier-mini
         --model ${CMAKE_SOURCE_DIR}/tests/fixtures/hf_config/pythia-160m.json --top 1)
set_tests_properties(perf_cli_plan_llama PROPERTIES LABELS perf TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "llama, 8030261248 parameters: 32 layers, hidden 4096, 32 heads \\(8 key/value\\)")
set_tests_properties(perf_cli_plan_hf_config PROPERTIES LABELS perf TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "gpt_neox, 162322944 parameters.*untied head")
