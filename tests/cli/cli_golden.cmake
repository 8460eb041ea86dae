# `muninn forward --output` equals the reference logits; `muninn generate` prints the reference ids.
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
cli_golden_inputs()
cli_run("forward" out COMMAND ${EXE} forward --model ${fixture} --tokens ${tokens} --steps ${r} --init-state zero
                                  --output ${WORK}/logits.npy)
cli_check_logits("forward" 1e-4)
cli_golden_generate(last_line "generate")
if(NOT last_line STREQUAL expected)
  message(FATAL_ERROR "generate printed '${last_line}', reference expects '${expected}'")
endif()
