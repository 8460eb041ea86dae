# `muninn forward --dump DIR --taps ...` on the Huginn fixture: the logits tap equals --output
# exactly, the last step's state tap equals the reference's final latents (PyTorch, within TOL),
# taps.json lists exactly the files written with their shapes, and an unknown tap or an
# unwritable folder is one clear usage error.
# Usage: cmake -DEXE=muninn -DNPY_COMPARE=npy_compare -DMODEL=<huginn tiny_f32> -DWORK=<dir> -P cli_dump.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(tokens 25,63,80,91,81,55,13,76,33,71,82,24)
execute_process(COMMAND ${EXE} forward --model ${MODEL} --tokens ${tokens} --steps 4 --init-state zero
                        --output ${WORK}/logits.npy --dump ${WORK}/dump --taps embeddings,state,logits,coda
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "muninn forward --dump failed (rc ${rc}): ${err}")
endif()
if(NOT err MATCHES "wrote 7 taps to ${WORK}/dump")
  message(FATAL_ERROR "expected 'wrote 7 taps' (embeddings, 4 states, coda.layer.0, logits) on stderr, got: ${err}")
endif()

# The logits tap is the call's output, bit for bit.
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/dump/logits.0.npy ${WORK}/logits.npy 0 RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the logits tap differs from --output: ${cmp}")
endif()
# The state after the last of 4 steps is the reference's raw final latent.
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/dump/state.step3.0.npy ${MODEL}/latents_r4.npy 1e-4
                RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "state.step3 differs from the reference's latents_r4.npy: ${cmp}")
endif()
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/dump/state.step2.0.npy ${MODEL}/latents_r4.npy 1e-4
                RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
if(rc EQUAL 0)
  message(FATAL_ERROR "state.step2 equals the final latents: the steps are mislabelled")
endif()

# taps.json: every file exists, with the shape written.
file(READ ${WORK}/dump/taps.json index)
string(JSON n LENGTH "${index}" files)
if(NOT n EQUAL 7)
  message(FATAL_ERROR "taps.json lists ${n} files, want 7: ${index}")
endif()
math(EXPR last "${n} - 1")
set(seen "")
foreach(i RANGE ${last})
  string(JSON file GET "${index}" files ${i} file)
  string(JSON name GET "${index}" files ${i} name)
  string(JSON step GET "${index}" files ${i} step)
  string(JSON rows GET "${index}" files ${i} shape 0)
  string(JSON cols GET "${index}" files ${i} shape 1)
  string(JSON dtype GET "${index}" files ${i} dtype)
  if(NOT EXISTS ${WORK}/dump/${file})
    message(FATAL_ERROR "taps.json lists ${file}, which was not written")
  endif()
  if(NOT rows EQUAL 12 OR NOT dtype STREQUAL "float32")
    message(FATAL_ERROR "${file}: shape [${rows}, ${cols}] ${dtype}, want 12 rows of float32")
  endif()
  list(APPEND seen "${name}@${step}")
endforeach()
set(want "embeddings@-1;state@0;state@1;state@2;state@3;coda.layer.0@-1;logits@-1")
if(NOT seen STREQUAL want)
  message(FATAL_ERROR "taps.json lists ${seen}, want ${want}")
endif()

# Halting statistics (generate --exit): with a threshold nothing reaches (latent change < 0), each
# of the 4 prompt tokens is checked after steps 0, 1 and 2 of 4, one call per token (the one new
# token needs no call); from a zero state the first check's relative change is |x - 0| / |x| = 1.
execute_process(COMMAND ${EXE} generate --model ${MODEL} --tokens 25,63,80,91 --max-new-tokens 1 --greedy --steps 4
                        --init-state zero --exit latent-diff --exit-threshold 0 --dump ${WORK}/halt --taps halt
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote 24 taps to ${WORK}/halt")
  message(FATAL_ERROR "generate --exit --taps halt (rc ${rc}): want 'wrote 24 taps' (4 tokens x 3 checks x 2): ${err}")
endif()
file(READ ${WORK}/halt/taps.json index)
string(JSON n LENGTH "${index}" files)
math(EXPR last "${n} - 1")
set(ones 0)
foreach(i RANGE ${last})
  string(JSON file GET "${index}" files ${i} file)
  string(JSON shape GET "${index}" files ${i} shape)
  string(REGEX REPLACE "[ \n]" "" shape "${shape}")
  if(NOT shape STREQUAL "[1,1]")
    message(FATAL_ERROR "${file}: shape ${shape}, want [1,1]")
  endif()
  if(file MATCHES "^halt\\.value\\.step0\\.")
    file(READ ${WORK}/halt/${file} bytes HEX)
    # float32 1.0, little-endian, is the file's last 4 bytes
    if(NOT bytes MATCHES "0000803f$")
      message(FATAL_ERROR "${file}: the first check's latent change from a zero state is not 1: ${bytes}")
    endif()
    math(EXPR ones "${ones} + 1")
  endif()
endforeach()
string(JSON positions GET "${index}" files ${last} positions)
string(REGEX REPLACE "[ \n]" "" positions "${positions}")
if(NOT ones EQUAL 4 OR NOT EXISTS ${WORK}/halt/halt.exited.step2.3.npy OR NOT positions STREQUAL "[3]")
  message(FATAL_ERROR "halt taps: ${ones} step-0 values, last file's positions ${positions}: ${index}")
endif()

# An unknown tap: usage error naming it and listing the model's taps.
execute_process(COMMAND ${EXE} forward --model ${MODEL} --tokens 1,2 --dump ${WORK}/dump2 --taps embeddings,bogus
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--taps: unknown tap 'bogus' \\(this model's taps: embeddings, prelude.layer.0, core.layer.0, core.layer.1, state, coda.layer.0, head.input, logits")
  message(FATAL_ERROR "unknown tap: rc ${rc}, ${err}")
endif()
# A folder that cannot be made: usage error naming it.
file(WRITE ${WORK}/a_file "")
execute_process(COMMAND ${EXE} forward --model ${MODEL} --tokens 1,2 --dump ${WORK}/a_file/sub RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--dump: cannot write to the folder '${WORK}/a_file/sub'")
  message(FATAL_ERROR "unwritable folder: rc ${rc}, ${err}")
endif()
# --taps alone.
execute_process(COMMAND ${EXE} forward --model ${MODEL} --tokens 1,2 --taps logits RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--taps needs --dump DIR")
  message(FATAL_ERROR "--taps without --dump: rc ${rc}, ${err}")
endif()
message(STATUS "dump: logits tap == --output, state.step3 == reference latents, taps.json lists 7 files")
