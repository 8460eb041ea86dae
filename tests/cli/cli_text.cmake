# Text in, text out: `muninn generate --prompt TEXT` prints the continuation of the Python reference
# (tests/data/huginn/tiny_text/text.json): its decoded text on the line before the last, its ids on the last.
# Usage: cmake -DEXE=muninn -DFIXTURE=.../tiny_text -P cli_text.cmake
#
# The expected text may contain U+FFFD (a multi-byte character cut between two ids), '<|...|>' special
# tokens and leading spaces. It is compared as bytes, and stdout must END WITH "TEXT\nIDS\n" right after a
# line break (or at its start), so no line splitting or stripping can hide a difference in white space.
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
file(READ ${FIXTURE}/text.json doc)
string(JSON n LENGTH "${doc}" prompts)
string(JSON steps GET "${doc}" steps)
string(JSON max_new GET "${doc}" max_new_tokens)
string(JSON init GET "${doc}" init)

# True when `text` ends with `tail` and the tail starts a line.
function(ends_with_lines out text tail)
  string(LENGTH "${text}" n_text)
  string(LENGTH "${tail}" n_tail)
  set(ok FALSE)
  if(n_text GREATER_EQUAL n_tail)
    math(EXPR start "${n_text} - ${n_tail}")
    string(SUBSTRING "${text}" ${start} ${n_tail} got)
    if(got STREQUAL tail)
      if(start EQUAL 0)
        set(ok TRUE)
      else()
        math(EXPR before "${start} - 1")
        string(SUBSTRING "${text}" ${before} 1 c)
        if(c STREQUAL "\n")
          set(ok TRUE)
        endif()
      endif()
    endif()
  endif()
  set(${out} ${ok} PARENT_SCOPE)
endfunction()

set(failures "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON prompt GET "${doc}" prompts ${i} text)
  string(JSON want_text GET "${doc}" prompts ${i} expected_text)
  json_ids(prompt_ids "${doc}" prompts ${i} ids)
  json_ids(want_ids "${doc}" prompts ${i} expected)

  # The prompt as text: tokenizer encode + model + tokenizer decode. Each argument is one list element, so
  # the text reaches muninn unchanged (UTF-8, leading space).
  cli_run("generate --prompt '${prompt}'" out
          COMMAND ${EXE} generate --model ${FIXTURE} --prompt "${prompt}" --max-new-tokens ${max_new}
                  --steps ${steps} --init-state ${init})
  ends_with_lines(text_ok "${out}" "${want_text}\n${want_ids}\n")

  # The same prompt as ids (no tokenizer involved): tells an encode bug from a model or decode bug.
  cli_run("generate --tokens ${prompt_ids}" out_ids
          COMMAND ${EXE} generate --model ${FIXTURE} --tokens ${prompt_ids} --max-new-tokens ${max_new}
                  --steps ${steps} --init-state ${init})
  ends_with_lines(ids_ok "${out_ids}" "${want_ids}\n")

  if(text_ok AND ids_ok)
    message(STATUS "ok: '${prompt}' -> '${want_text}' [${want_ids}]")
  else()
    string(APPEND failures "\nprompt '${prompt}' (ids ${prompt_ids}):\n"
           "  expected stdout to end with:\n${want_text}\n${want_ids}\n"
           "  --prompt run printed:\n${out}"
           "  --tokens run printed:\n${out_ids}")
    if(ids_ok AND NOT text_ok)
      string(APPEND failures "  (the --tokens run is right: encode or decode differs from `tokenizers`)\n")
    endif()
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "muninn generate --prompt differs from the reference:${failures}")
endif()
