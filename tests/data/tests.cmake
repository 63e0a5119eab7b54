# `tierzero tokenize` end to end: train a small vocabulary on a text, encode it into llm.c shards,
# train on those shards with a glob; and its errors (each must name the option or file).
set(TZ_TOK_DIR ${CMAKE_BINARY_DIR}/tokenize_test)
set(TZ_TOK_TEXT ${PROJECT_SOURCE_DIR}/docs/algorithms.md)
add_test(NAME tokenize_train_vocab COMMAND $<TARGET_FILE:tierzero> tokenize --train-vocab 400 --tokenizer ${TZ_TOK_DIR}/vocab ${TZ_TOK_TEXT})
set_tests_properties(tokenize_train_vocab PROPERTIES FIXTURES_SETUP tok_vocab LABELS data PASS_REGULAR_EXPRESSION "trained 400 tokens")
add_test(NAME tokenize_writes_shards COMMAND $<TARGET_FILE:tierzero> tokenize --tokenizer ${TZ_TOK_DIR}/vocab --out ${TZ_TOK_DIR}/shard --shard-tokens 4000 ${TZ_TOK_TEXT} ${PROJECT_SOURCE_DIR}/docs/plan.md)
set_tests_properties(tokenize_writes_shards PROPERTIES FIXTURES_REQUIRED tok_vocab FIXTURES_SETUP tok_shards LABELS data
  PASS_REGULAR_EXPRESSION "shard_000001.bin \\(4000 tokens\\).*2 documents")
add_test(NAME tokenize_shards_train COMMAND $<TARGET_FILE:tierzero> train --no-progress --steps 2 --seq 32 --batch 2 --log-every 1
  --model ${CMAKE_CURRENT_LIST_DIR}/vocab401.json --data "${TZ_TOK_DIR}/shard_*.bin")
set_tests_properties(tokenize_shards_train PROPERTIES FIXTURES_REQUIRED tok_shards LABELS data
  PASS_REGULAR_EXPRESSION "shards \\(llm.c uint16\\).*done: final loss")
add_test(NAME tokenize_vocab_too_small_for_shards COMMAND $<TARGET_FILE:tierzero> train --no-progress --steps 1 --seq 32 --batch 2
  --model gpt-tiny --data "${TZ_TOK_DIR}/shard_*.bin")
set_tests_properties(tokenize_vocab_too_small_for_shards PROPERTIES FIXTURES_REQUIRED tok_shards LABELS data
  PASS_REGULAR_EXPRESSION "token id [0-9]+ at token index [0-9]+ \\(byte offset [0-9]+\\) is outside the model's vocabulary \\[0, 256\\)")
add_test(NAME tokenize_missing_tokenizer COMMAND $<TARGET_FILE:tierzero> tokenize --tokenizer ${TZ_TOK_DIR}/absent --out ${TZ_TOK_DIR}/x ${TZ_TOK_TEXT})
set_tests_properties(tokenize_missing_tokenizer PROPERTIES LABELS data PASS_REGULAR_EXPRESSION "--tokenizer .*absent: no such file")
add_test(NAME tokenize_missing_text COMMAND $<TARGET_FILE:tierzero> tokenize --tokenizer ${TZ_TOK_DIR}/vocab --out ${TZ_TOK_DIR}/x ${TZ_TOK_DIR}/absent.txt)
set_tests_properties(tokenize_missing_text PROPERTIES FIXTURES_REQUIRED tok_vocab LABELS data PASS_REGULAR_EXPRESSION "absent.txt: no such file")
add_test(NAME tokenize_bad_shard_tokens COMMAND $<TARGET_FILE:tierzero> tokenize --tokenizer ${TZ_TOK_DIR}/vocab --out ${TZ_TOK_DIR}/x --shard-tokens 0 ${TZ_TOK_TEXT})
set_tests_properties(tokenize_bad_shard_tokens PROPERTIES LABELS data PASS_REGULAR_EXPRESSION "--shard-tokens 0")
add_test(NAME train_data_glob_no_match COMMAND $<TARGET_FILE:tierzero> train --no-progress --steps 1 --data "${TZ_TOK_DIR}/nothing_*.bin")
set_tests_properties(train_data_glob_no_match PROPERTIES LABELS data PASS_REGULAR_EXPRESSION "pattern '.*nothing_\\*.bin' matches no file")
# A Llama 3 style tokenizer.json (its own pre-tokenizer pattern) drives `tokenize` end to end.
add_test(NAME tokenize_llama3_style_tokenizer_json COMMAND $<TARGET_FILE:tierzero> tokenize
  --tokenizer ${PROJECT_SOURCE_DIR}/tests/fixtures/tokenizers/llama3_style.json --out ${TZ_TOK_DIR}/llama3 ${TZ_TOK_TEXT})
set_tests_properties(tokenize_llama3_style_tokenizer_json PROPERTIES LABELS data
  PASS_REGULAR_EXPRESSION "269 tokens, 10 merges, Llama 3 pre-tokenizer; shards of uint16.*1 documents")
