# The layers compute GPT-2 alone: training or sampling another architecture is one clear error.
add_test(NAME model_cli_train_refuses_llama COMMAND tierzero train --model tinyllama-1.1b --steps 1)
add_test(NAME model_cli_sample_refuses_neox COMMAND tierzero sample
         --weights ${CMAKE_BINARY_DIR}/no-such-weights.safetensors --model pythia-160m --prompt hi)
set_tests_properties(model_cli_train_refuses_llama PROPERTIES LABELS model TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "the llama model needs RMSNorm, which tierzero's layers do not compute yet")
set_tests_properties(model_cli_sample_refuses_neox PROPERTIES LABELS model TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "the gpt_neox model needs rotary positions")
