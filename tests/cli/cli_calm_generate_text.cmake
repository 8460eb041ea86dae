# `muninn generate --prompt TEXT` on the CALM fixture with a tokenizer prints what
# tools/reference/make_calm_fixtures.py wrote into expected.json's "generate_text": the reference's
# generation on the saved files, tokenized and decoded by the `tokenizers` library. Exact match of
# the text line and the id line.
# Usage: cmake -DEXE=muninn -DCALM=<tests/data/calm> -P cli_calm_generate_text.cmake
file(READ ${CALM}/expected.json expected)
string(JSON case GET "${expected}" generate_text)
foreach(key prompt seed max_new_tokens text)
  string(JSON ${key} GET "${case}" ${key})
endforeach()
string(JSON n LENGTH "${case}" ids)
math(EXPR last "${n} - 1")
set(ids "")
foreach(i RANGE ${last})
  string(JSON id GET "${case}" ids ${i})
  list(APPEND ids ${id})
endforeach()
string(REPLACE ";" "," ids "${ids}")
execute_process(COMMAND ${EXE} generate --model ${CALM}/calm_safetensors --ae ${CALM}/ae --prompt "${prompt}"
                        --max-new-tokens ${max_new_tokens} --seed ${seed}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out STREQUAL "${text}\n${ids}\n")
  message(FATAL_ERROR "muninn printed\n${out}the reference (expected.json generate_text):\n${text}\n${ids}\n")
endif()
message(STATUS "generate --prompt matches the reference: ${text} / ${ids}")
