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
