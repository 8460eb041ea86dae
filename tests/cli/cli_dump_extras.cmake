# `muninn solve --dump` and `muninn ae --dump`: TRM's per-step logits taps against the reference's
# logits at the steps it recorded (1, 2 and 16: slices 0, 1, 2 of logits.npy), a wrong step
# failing; the z_L / z_H stream taps' files, shapes and order; the autoencoder's mean, log sigma
# and logits with their shapes in taps.json.
# Usage: cmake -DEXE=muninn -DNPY_COMPARE=npy_compare -DTRM=<tests/data/trm> -DCALM=<tests/data/calm>
#              -DWORK=<dir> -P cli_dump_extras.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${EXE} solve --model ${TRM}/trm_mlpt_f32 --data ${TRM}/data/sudoku4 --limit 4
                        --dump ${WORK}/trm --taps logits,q_halt
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote 32 taps to ${WORK}/trm")
  message(FATAL_ERROR "muninn solve --dump (rc ${rc}): want 'wrote 32 taps' (16 steps x logits, q_halt): ${err}")
endif()
foreach(pair "0;0" "1;1" "15;2")
  list(GET pair 0 step)
  list(GET pair 1 slice)
  execute_process(COMMAND ${NPY_COMPARE} ${WORK}/trm/logits.step${step}.0.npy ${TRM}/trm_mlpt_f32/logits.npy 1e-4 ${slice}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "TRM logits tap at step ${step} differs from the reference (logits.npy[${slice}]): ${cmp}")
  endif()
endforeach()
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/trm/logits.step14.0.npy ${TRM}/trm_mlpt_f32/logits.npy 1e-4 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
if(rc EQUAL 0)
  message(FATAL_ERROR "TRM logits tap at step 14 equals the reference's step 16: the steps are mislabelled")
endif()
file(READ ${WORK}/trm/taps.json index)
string(JSON shape GET "${index}" files 0 shape)
string(JSON name GET "${index}" files 0 name)
string(JSON positions GET "${index}" files 0 positions)
string(REGEX REPLACE "[ \n]" "" shape "${shape}")
string(REGEX REPLACE "[ \n]" "" positions "${positions}")
if(NOT name STREQUAL "logits" OR NOT shape STREQUAL "[4,16,6]" OR NOT positions STREQUAL "[0,1,2,3]")
  message(FATAL_ERROR "taps.json's first file: ${name} ${shape} ${positions}, want logits [4,16,6] [0,1,2,3]")
endif()

# The streams within a step: z_H.cycle.2 (the last of T = 3) and z_L.cycle.0.J (n = 2) at each of
# 2 steps, [puzzles, S = 16 + 16, D = 12], the puzzles in the positions; a prefix selects them.
execute_process(COMMAND ${EXE} solve --model ${TRM}/trm_mlpt_f32 --data ${TRM}/data/sudoku4 --limit 4 --max-steps 2
                        --halt fixed --dump ${WORK}/streams --taps z_H.cycle.2,z_L.cycle.0
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote 6 taps to ${WORK}/streams")
  message(FATAL_ERROR "muninn solve --taps z_H.cycle.2,z_L.cycle.0 (rc ${rc}): want 'wrote 6 taps': ${err}")
endif()
file(READ ${WORK}/streams/taps.json index)
set(got "")
foreach(i 0 1 2 3 4 5)
  string(JSON file GET "${index}" files ${i} file)
  string(JSON shape GET "${index}" files ${i} shape)
  string(JSON positions GET "${index}" files ${i} positions)
  string(REGEX REPLACE "[ \n]" "" shape "${shape}")
  string(REGEX REPLACE "[ \n]" "" positions "${positions}")
  if(NOT EXISTS ${WORK}/streams/${file} OR NOT shape STREQUAL "[4,32,12]" OR NOT positions STREQUAL "[0,1,2,3]")
    message(FATAL_ERROR "stream tap ${file}: shape ${shape}, positions ${positions}; want [4,32,12], [0,1,2,3]")
  endif()
  list(APPEND got "${file}")
endforeach()
set(want "z_L.cycle.0.0.step0.0.npy;z_L.cycle.0.1.step0.0.npy;z_H.cycle.2.step0.0.npy;z_L.cycle.0.0.step1.0.npy;z_L.cycle.0.1.step1.0.npy;z_H.cycle.2.step1.0.npy")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "stream taps: ${got}, want ${want}")
endif()
# A cycle the model does not have: a usage error listing the taps it has.
execute_process(COMMAND ${EXE} solve --model ${TRM}/trm_mlpt_f32 --data ${TRM}/data/sudoku4 --limit 1 --max-steps 1
                        --dump ${WORK}/streams3 --taps z_H.cycle.3 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "unknown tap 'z_H.cycle.3' \\(this model's taps: logits, q_halt, q_continue, z_L.cycle.0.0, z_L.cycle.0.1, z_H.cycle.0, ")
  message(FATAL_ERROR "unknown stream tap: rc ${rc}, ${err}")
endif()

execute_process(COMMAND ${EXE} ae --model ${CALM}/ae --tokens 12,50,30,27,29,27,31,11,12,27,10,35,12,29,56,2,62,7,14,31,11,56,3,29
                        --dump ${WORK}/ae RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote 3 taps to ${WORK}/ae")
  message(FATAL_ERROR "muninn ae --dump (rc ${rc}): ${err}")
endif()
file(READ ${WORK}/ae/taps.json index)
set(got "")
foreach(i 0 1 2)
  string(JSON name GET "${index}" files ${i} name)
  string(JSON shape GET "${index}" files ${i} shape)
  string(REGEX REPLACE "[ \n]" "" shape "${shape}")
  list(APPEND got "${name}${shape}")
endforeach()
if(NOT got STREQUAL "ae.mean[6,8];ae.log_sigma[6,8];ae.logits[24,64]")
  message(FATAL_ERROR "ae taps.json: ${got}")
endif()
message(STATUS "solve --dump: logits taps at steps 1, 2, 16 equal the reference's; ae --dump: mean, log sigma, logits")
