# Real multi-process save / kill / resume runs of the binary (tiny model, fortunes corpus, a few steps).
# They share one scratch directory; CTest fixtures order them: the clean-up first, each resume after
# its save, each comparison after both runs it compares.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(TZ_CK_DIR ${CMAKE_BINARY_DIR}/checkpoint-tests)
set(TZ_CK_RUN $<TARGET_FILE:tierzero> train --no-progress --log-every 1
    --config ${CMAKE_CURRENT_LIST_DIR}/configs/resume_fp32.json)
set(TZ_CK_COMPARE ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/compare_metrics.py)

# Emptied and made again: runs write their --metrics files into it, and which run comes first
# depends on CTest's scheduling.
add_test(NAME ckpt_mpi_clean COMMAND ${Python3_EXECUTABLE} -c
         "import os, shutil, sys; shutil.rmtree(sys.argv[1], True); os.makedirs(sys.argv[1])" ${TZ_CK_DIR})
set_tests_properties(ckpt_mpi_clean PROPERTIES FIXTURES_SETUP ckpt_dir LABELS mpi)
function(tz_ck_test name np)
  cmake_parse_arguments(C "" "PASS;SETUP;REQUIRES" "ARGS" ${ARGN})
  tz_add_mpi_test(NAME ${name} NP ${np} COMMAND ${TZ_CK_RUN} ${C_ARGS})
  set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${C_PASS}" FIXTURES_REQUIRED "ckpt_dir;${C_REQUIRES}")
  if(C_SETUP)
    set_tests_properties(${name} PROPERTIES FIXTURES_SETUP ${C_SETUP})
  endif()
endfunction()

# Same shape: 3 ranks, zero3, fp32. Uninterrupted 6 steps; 3 steps saved, then resumed to 6: bitwise.
tz_ck_test(ckpt_mpi_uninterrupted_np3 3 ARGS --metrics ${TZ_CK_DIR}/whole.jsonl
           PASS "done: final loss" SETUP ckpt_whole)
tz_ck_test(ckpt_mpi_save_np3 3 ARGS --steps 3 --save-every 3 --save-dir ${TZ_CK_DIR}/same
           PASS "saved .*same/step_3.*done: final loss" SETUP ckpt_same_saved)
tz_ck_test(ckpt_mpi_resume_np3 3 ARGS --resume ${TZ_CK_DIR}/same --metrics ${TZ_CK_DIR}/same.jsonl
           PASS "resumed from .*same/step_3 at step 3.*done: final loss" REQUIRES ckpt_same_saved SETUP ckpt_same_resumed)
add_test(NAME ckpt_mpi_resume_np3_bitwise
         COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/whole.jsonl ${TZ_CK_DIR}/same.jsonl --from-step 4)
set_tests_properties(ckpt_mpi_resume_np3_bitwise PROPERTIES FIXTURES_REQUIRED "ckpt_whole;ckpt_same_resumed"
                     PASS_REGULAR_EXPRESSION "bitwise equal" LABELS mpi TIMEOUT 60)

# The other families the same way: a Llama (grouped-query, untied) and a GPT-NeoX from their Hugging
# Face config.json, 3 ranks zero3 in fp32, saved at 3 and resumed to 6: bitwise the uninterrupted run.
foreach(family llama neox)
  set(model --model ${CMAKE_CURRENT_LIST_DIR}/../model/configs/tiny_${family}_hf.json)
  tz_ck_test(ckpt_mpi_${family}_uninterrupted_np3 3 ARGS ${model} --metrics ${TZ_CK_DIR}/${family}_whole.jsonl
             PASS "done: final loss" SETUP ckpt_${family}_whole)
  tz_ck_test(ckpt_mpi_${family}_save_np3 3 ARGS ${model} --steps 3 --save-every 3 --save-dir ${TZ_CK_DIR}/${family}
             PASS "saved .*${family}/step_3.*done: final loss" SETUP ckpt_${family}_saved)
  tz_ck_test(ckpt_mpi_${family}_resume_np3 3 ARGS ${model} --resume ${TZ_CK_DIR}/${family}
             --metrics ${TZ_CK_DIR}/${family}_resumed.jsonl PASS "resumed from .*${family}/step_3 at step 3.*done: final loss"
             REQUIRES ckpt_${family}_saved SETUP ckpt_${family}_resumed)
  add_test(NAME ckpt_mpi_${family}_resume_np3_bitwise
           COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/${family}_whole.jsonl ${TZ_CK_DIR}/${family}_resumed.jsonl --from-step 4)
  set_tests_properties(ckpt_mpi_${family}_resume_np3_bitwise PROPERTIES
                       FIXTURES_REQUIRED "ckpt_${family}_whole;ckpt_${family}_resumed"
                       PASS_REGULAR_EXPRESSION "bitwise equal" LABELS mpi TIMEOUT 60)
endforeach()

# The strict emulated device (docs/backends.md): 8 ranks of three-level on frontier-mini print bitwise
# the metrics of the cpu backend; a checkpoint saved on the emulated device resumes on the cpu one
# bitwise as the uninterrupted run.
foreach(device cpu emulated)
  tz_ck_test(ckpt_mpi_device_${device}_np8 8 ARGS --topology frontier-mini --emulate --plan three-level --batch 3
             --steps 3 --device ${device} --metrics ${TZ_CK_DIR}/device_${device}.jsonl PASS "done: final loss"
             SETUP ckpt_device_${device})
endforeach()
add_test(NAME ckpt_mpi_device_emulated_equals_cpu
         COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/device_cpu.jsonl ${TZ_CK_DIR}/device_emulated.jsonl --from-step 1)
set_tests_properties(ckpt_mpi_device_emulated_equals_cpu PROPERTIES
                     FIXTURES_REQUIRED "ckpt_device_cpu;ckpt_device_emulated" PASS_REGULAR_EXPRESSION "bitwise equal"
                     LABELS mpi TIMEOUT 60)
tz_ck_test(ckpt_mpi_save_emulated_np3 3 ARGS --steps 3 --save-every 3 --save-dir ${TZ_CK_DIR}/emulated --device emulated
           PASS "saved .*emulated/step_3.*done: final loss" SETUP ckpt_emulated_saved)
tz_ck_test(ckpt_mpi_resume_emulated_on_cpu_np3 3 ARGS --resume ${TZ_CK_DIR}/emulated --device cpu
           --metrics ${TZ_CK_DIR}/emulated_resumed.jsonl PASS "resumed from .*emulated/step_3 at step 3.*done: final loss"
           REQUIRES ckpt_emulated_saved SETUP ckpt_emulated_resumed)
add_test(NAME ckpt_mpi_resume_emulated_on_cpu_bitwise
         COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/whole.jsonl ${TZ_CK_DIR}/emulated_resumed.jsonl --from-step 4)
set_tests_properties(ckpt_mpi_resume_emulated_on_cpu_bitwise PROPERTIES
                     FIXTURES_REQUIRED "ckpt_whole;ckpt_emulated_resumed" PASS_REGULAR_EXPRESSION "bitwise equal"
                     LABELS mpi TIMEOUT 60)

# Another shape: 8 ranks three-level on frontier-mini -> 3 ranks zero3 on flat -> 1 process, the
# global batch kept at 24 sequences; the continued losses match an uninterrupted run at each new shape
# to 1e-5 relative (only the reduction order changes).
tz_ck_test(ckpt_mpi_three_level_np8_save 8 ARGS --topology frontier-mini --emulate --plan three-level --batch 3
           --steps 2 --save-every 2 --save-dir ${TZ_CK_DIR}/shape PASS "saved .*shape/step_2" SETUP ckpt_shape8)
tz_ck_test(ckpt_mpi_uninterrupted_zero3_np3 3 ARGS --plan zero3 --batch 8 --steps 4
           --metrics ${TZ_CK_DIR}/shape3_whole.jsonl PASS "done: final loss" SETUP ckpt_shape3_whole)
tz_ck_test(ckpt_mpi_resume_np8_on_np3_zero3 3 ARGS --plan zero3 --batch 8 --steps 4 --resume ${TZ_CK_DIR}/shape
           --save-dir ${TZ_CK_DIR}/shape --save-every 4 --metrics ${TZ_CK_DIR}/shape3.jsonl
           PASS "resumed from .*shape/step_2 at step 2.*world size: 8 -> 3.*saved .*shape/step_4"
           REQUIRES ckpt_shape8 SETUP ckpt_shape3)
add_test(NAME ckpt_mpi_resume_np8_on_np3_close
         COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/shape3_whole.jsonl ${TZ_CK_DIR}/shape3.jsonl --from-step 3 --rtol 1e-5)
set_tests_properties(ckpt_mpi_resume_np8_on_np3_close PROPERTIES FIXTURES_REQUIRED "ckpt_shape3_whole;ckpt_shape3"
                     PASS_REGULAR_EXPRESSION "steps 3..4: losses within 1e-05 relative" LABELS mpi TIMEOUT 60)
foreach(kind whole resumed)
  if(kind STREQUAL "whole")
    set(extra --metrics ${TZ_CK_DIR}/shape1_whole.jsonl)
    set(fixture ckpt_dir)
    set(pass "done")
  else()
    set(extra --resume ${TZ_CK_DIR}/shape --metrics ${TZ_CK_DIR}/shape1.jsonl)
    set(fixture "ckpt_dir;ckpt_shape3")
    set(pass "resumed from .*shape/step_4 at step 4.*world size: 3 -> 1.*done")
  endif()
  add_test(NAME ckpt_one_process_${kind} COMMAND ${TZ_CK_RUN} --plan zero3 --batch 24 --steps 5 ${extra})
  set_tests_properties(ckpt_one_process_${kind} PROPERTIES FIXTURES_REQUIRED "${fixture}" LABELS mpi
                       TIMEOUT 120 PASS_REGULAR_EXPRESSION "${pass}" FIXTURES_SETUP ckpt_one_${kind})
endforeach()
add_test(NAME ckpt_resume_np3_on_one_process_close
         COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/shape1_whole.jsonl ${TZ_CK_DIR}/shape1.jsonl --from-step 5 --rtol 1e-5)
set_tests_properties(ckpt_resume_np3_on_one_process_close PROPERTIES FIXTURES_REQUIRED "ckpt_one_whole;ckpt_one_resumed"
                     PASS_REGULAR_EXPRESSION "steps 5..5: losses within 1e-05 relative" LABELS mpi TIMEOUT 60)

# kill -9 during the save of step 4, at each point of the protocol (the writer rank 1 half-way through
# its file; rank 0 after the manifest, after the rename, after the marker): step_2 stays latest, the
# resume uses it and continues bitwise as the uninterrupted run.
foreach(point write manifest rename marker)
  if(point STREQUAL "write")
    set(krank 1)
  else()
    set(krank 0)
  endif()
  tz_ck_test(ckpt_mpi_kill_${point}_np3 3 ARGS --save-every 2 --save-dir ${TZ_CK_DIR}/kill_${point}
             --inject-save-kill ${point} --inject-save-kill-rank ${krank} --inject-save-kill-step 4
             PASS "saved .*kill_${point}/step_2.*signal 9" SETUP ckpt_kill_${point})
  tz_ck_test(ckpt_mpi_kill_${point}_resume_np3 3 ARGS --resume ${TZ_CK_DIR}/kill_${point}
             --metrics ${TZ_CK_DIR}/kill_${point}.jsonl
             PASS "resumed from .*kill_${point}/step_2 at step 2.*done: final loss"
             REQUIRES ckpt_kill_${point} SETUP ckpt_kill_${point}_resumed)
  add_test(NAME ckpt_mpi_kill_${point}_bitwise
           COMMAND ${TZ_CK_COMPARE} ${TZ_CK_DIR}/whole.jsonl ${TZ_CK_DIR}/kill_${point}.jsonl --from-step 3)
  set_tests_properties(ckpt_mpi_kill_${point}_bitwise PROPERTIES FIXTURES_REQUIRED
                       "ckpt_whole;ckpt_kill_${point}_resumed" PASS_REGULAR_EXPRESSION "bitwise equal" LABELS mpi TIMEOUT 60)
endforeach()

# Export of a real run's checkpoint (one process, no MPI) and import into a 2-rank fine-tuning run.
add_test(NAME ckpt_export_safetensors
         COMMAND $<TARGET_FILE:tierzero> export ${TZ_CK_DIR}/same --out ${TZ_CK_DIR}/model.safetensors --dtype bf16)
set_tests_properties(ckpt_export_safetensors PROPERTIES FIXTURES_REQUIRED "ckpt_dir;ckpt_same_saved" LABELS mpi
                     TIMEOUT 60 FIXTURES_SETUP ckpt_exported PASS_REGULAR_EXPRESSION "exported .*step_3.*safetensors, 52 tensors")
tz_ck_test(ckpt_mpi_init_from_np2 2 ARGS --steps 2 --init-from ${TZ_CK_DIR}/model.safetensors
           PASS "initialised from .*model.safetensors \\(safetensors, bf16.*done: final loss" REQUIRES ckpt_exported)
# --steps 0 with --init-from and --save-dir: a model file becomes a checkpoint (step 0), which a run
# then resumes; --steps 0 alone is refused (tests/cli).
tz_ck_test(ckpt_mpi_model_file_to_checkpoint_np2 2 ARGS --steps 0 --init-from ${TZ_CK_DIR}/model.safetensors
           --save-dir ${TZ_CK_DIR}/from_model PASS "initialised from .*model.safetensors.*saved .*from_model/step_0"
           REQUIRES ckpt_exported SETUP ckpt_from_model)
tz_ck_test(ckpt_mpi_resume_model_checkpoint_np2 2 ARGS --steps 2 --resume ${TZ_CK_DIR}/from_model
           PASS "resumed from .*from_model/step_0 at step 0.*done: final loss" REQUIRES ckpt_from_model)
