# `muninn eval --metric brierlm` on the tiny Llama of tests/data/brier/llama_case.json prints the
# BrierLM that tools/reference/brier_ref.py computed with transformers and the same draws:
# Brier-1..4 within 1e-6, BrierLM (x100) within 2e-5, and the block / token counts exactly.
# (test_brier's ModelBrier.LlamaMatchesThePyTorchOracle holds the C++ API to the same numbers.)
# Usage: cmake -DEXE=muninn -DDATA=<tests/data> -P cli_eval_oracle.cmake
file(READ ${DATA}/brier/llama_case.json case)
foreach(key model data block_size seed blocks tokens dropped brierlm_e6)
  string(JSON ${key} GET "${case}" ${key})
endforeach()
execute_process(COMMAND ${EXE} eval --model ${DATA}/${model} --data ${DATA}/brier/${data} --metric brierlm
                        --block-size ${block_size} --seed ${seed}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
set(head "metric=brierlm blocks=${blocks} block_size=${block_size} tokens=${tokens} dropped=${dropped} seed=${seed}\n")
string(FIND "${out}" "${head}" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "the output does not start with\n${head}got:\n${out}")
endif()

# fixed(<out> <key> <decimals>): the value printed as `key=-0.123...` as an integer in units of
# 10^-decimals (CMake's math is integer only).
function(fixed out key decimals)
  string(REGEX MATCH "(^|[ \n])${key}=(-?)([0-9]+)\\.([0-9]+)" m "${out_text}")
  if(NOT m)
    message(FATAL_ERROR "no ${key}= in the output:\n${out_text}")
  endif()
  string(LENGTH "${CMAKE_MATCH_4}" len)
  if(NOT len EQUAL decimals)
    message(FATAL_ERROR "${key} is printed with ${len} decimals, expected ${decimals}:\n${out_text}")
  endif()
  set(sign "${CMAKE_MATCH_2}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" digits "${CMAKE_MATCH_3}${CMAKE_MATCH_4}")
  set(${out} "${sign}${digits}" PARENT_SCOPE)
endfunction()

# near(<what> <got> <want> <tol>): |got - want| <= tol, integers.
function(near what got want tol)
  math(EXPR d "${got} - (${want})")
  if(d LESS 0)
    math(EXPR d "0 - ${d}")
  endif()
  if(d GREATER tol)
    message(FATAL_ERROR "${what}: muninn ${got}, oracle ${want} (differ by ${d} > ${tol})\n${out_text}")
  endif()
endfunction()

set(out_text "${out}")
foreach(n 1 2 3 4)
  math(EXPR i "${n} - 1")
  string(JSON want GET "${case}" brier_e9 ${i})
  fixed(got brier${n} 9)
  near("brier${n} (1e-9 units)" ${got} ${want} 1000)
endforeach()
fixed(got brierlm 6)
near("brierlm x100 (1e-6 units)" ${got} ${brierlm_e6} 20)
message(STATUS "eval matches the oracle: ${out}")
