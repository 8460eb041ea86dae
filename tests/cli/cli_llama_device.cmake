# A Llama checkpoint through the CLI on one device, against transformers' outputs
# (tests/data/llama/tiny_text/expected.json and logits.npy):
#   forward --output      logits of the 8 prompt positions within 1e-4 (cpu) or 1e-3 (cuda fp32:
#                         cuBLAS sums in another order; the smallest logit change a wrong kernel
#                         makes on these fixtures is far larger)
#   generate --prompt     the greedy continuation's text and ids exactly (min top1-top2 margin
#                         0.0916 along the path, so an fp32 error under 1e-3 cannot flip a token)
#   generate --dtype bf16 (cuda only) runs and prints a list of ids: bf16 may flip near ties
# Usage: cmake -DEXE=muninn -DNPY_COMPARE=npy_compare -DTEST_DATA=tests/data -DWORK=dir
#              -DDEVICE=cpu|cuda -P cli_llama_device.cmake
# With DEVICE=cuda and no usable GPU it prints "skipped: no CUDA device" and succeeds.
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
if(NOT DEVICE MATCHES "^(cpu|cuda)$")
  message(FATAL_ERROR "DEVICE must be cpu or cuda, got '${DEVICE}'")
endif()
set(fixture ${TEST_DATA}/llama/tiny_text)
file(READ ${fixture}/expected.json expected_json)
json_ids(prompt_ids "${expected_json}" prompt_ids)
json_ids(want_ids "${expected_json}" greedy ids)
string(JSON want_text GET "${expected_json}" greedy text)
string(JSON max_new GET "${expected_json}" greedy max_new_tokens)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

execute_process(COMMAND ${EXE} forward --model ${fixture} --tokens ${prompt_ids} --device ${DEVICE}
                        --output ${WORK}/logits.npy
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEVICE STREQUAL "cuda" AND NOT rc EQUAL 0 AND err MATCHES "^muninn: error: no CUDA device: ")
  message(STATUS "skipped: no CUDA device (${err})")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "forward --device ${DEVICE} failed (rc ${rc}): ${err}")
endif()
set(tolerance 1e-4)
if(DEVICE STREQUAL "cuda")
  set(tolerance 1e-3)
endif()
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/logits.npy ${fixture}/logits.npy ${tolerance}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "forward --device ${DEVICE}: logits differ from transformers' (tolerance ${tolerance}): ${out}${err}")
endif()

cli_run("generate --device ${DEVICE}" out COMMAND ${EXE} generate --model ${fixture} --prompt "The cat sat"
                                                   --max-new-tokens ${max_new} --device ${DEVICE})
if(NOT out STREQUAL "${want_text}\n${want_ids}\n")
  message(FATAL_ERROR "generate --device ${DEVICE} printed\n${out}\ntransformers' greedy continuation is\n${want_text}\n${want_ids}")
endif()

if(DEVICE STREQUAL "cuda")
  cli_run("generate --device cuda --dtype bf16" out COMMAND ${EXE} generate --model ${fixture} --tokens ${prompt_ids}
                                                          --max-new-tokens ${max_new} --device cuda --dtype bf16)
  string(STRIP "${out}" out)
  string(REGEX REPLACE ".*\n" "" last_line "${out}")
  if(NOT last_line MATCHES "^[0-9]+(,[0-9]+)*$")
    message(FATAL_ERROR "generate --device cuda --dtype bf16 printed '${last_line}', not a list of ids")
  endif()
endif()
