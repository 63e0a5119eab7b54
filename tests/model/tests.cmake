# A Llama and a GPT-NeoX from their Hugging Face config.json train from the command line (the
# parity, resume and PyTorch suites check the numbers).
foreach(family llama neox)
  add_test(NAME model_cli_train_tiny_${family} COMMAND tierzero train --no-progress
           --model ${CMAKE_CURRENT_LIST_DIR}/configs/tiny_${family}_hf.json --steps 3 --seq 32 --batch 2 --log-every 1)
  set_tests_properties(model_cli_train_tiny_${family} PROPERTIES LABELS model TIMEOUT 120
                       PASS_REGULAR_EXPRESSION "done: final loss")
endforeach()
