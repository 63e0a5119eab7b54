# CLI runs of the cost model: the plan table (presets and search) and a small sweep without charts.
add_test(NAME perf_cli_plan COMMAND tierzero plan --topology frontier --nodes 2 --model gpt-20b --top 3)
add_test(NAME perf_cli_plan_json COMMAND tierzero plan --topology frontier-mini --model gpt-tiny --format json)
add_test(NAME perf_cli_simulate COMMAND tierzero simulate --topology frontier --model gpt-20b --nodes 1 2
         --no-charts --out ${CMAKE_BINARY_DIR}/perf-simulate-test)
add_test(NAME perf_cli_bad_model COMMAND tierzero plan --model /no/such/model.json)
set_tests_properties(perf_cli_bad_model PROPERTIES WILL_FAIL TRUE)
set_tests_properties(perf_cli_plan perf_cli_plan_json perf_cli_simulate perf_cli_bad_model PROPERTIES LABELS perf TIMEOUT 120)
