# Smoke runs of the quantization benchmarks through the CLI (tiny sizes: they check that the
# commands run to completion, exit code 0, not speed).
add_test(NAME quant_cli_bench_quant
         COMMAND $<TARGET_FILE:tierzero> bench quant --elements 4096 --reps 1 --runs 1 --isa all --sweep)
add_test(NAME quant_cli_bench_qcomm
         COMMAND $<TARGET_FILE:tierzero> bench qcomm --threads 8 --sizes 1000 --iters 1)
set_tests_properties(quant_cli_bench_quant quant_cli_bench_qcomm PROPERTIES LABELS quant TIMEOUT 120)
