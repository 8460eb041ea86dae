# `muninn forward` on a fixture gives the reference's logits (max |diff| <= TOL, npy_compare) and
# prints the reference's argmax at every position (the argmax of each row of the fixture's logits).
# Usage: cmake -DEXE=muninn -DNPY_COMPARE=npy_compare -DMODEL=<dir> -DTOKENS=1,2,3 -DREF=<logits.npy>
#              -DTOL=1e-4 -DWORK=<dir> [-DEXTRA=--steps|3|--init-state|zero] -P cli_forward_golden.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
string(REPLACE "|" ";" EXTRA "${EXTRA}")
execute_process(COMMAND ${EXE} forward --model ${MODEL} --tokens ${TOKENS} ${EXTRA} --output ${WORK}/logits.npy
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "muninn forward failed (rc ${rc}): ${err}")
endif()
execute_process(COMMAND ${NPY_COMPARE} ${WORK}/logits.npy ${REF} ${TOL} RESULT_VARIABLE rc OUTPUT_VARIABLE cmp)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "logits differ from ${REF}: ${cmp}")
endif()
string(REGEX MATCH "argmax per row of B: ([0-9,]+)" _m "${cmp}")
set(want "${CMAKE_MATCH_1}")
if(NOT out MATCHES "\nargmax per position: ${want}\n")
  message(FATAL_ERROR "muninn forward does not print the reference's argmax ${want}:\n${out}")
endif()
message(STATUS "forward: the reference's logits (${cmp}) and argmax ${want}")
