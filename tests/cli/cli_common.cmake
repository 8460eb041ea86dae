# Functions shared by the CLI test scripts (cli_golden.cmake, cli_golden_cuda.cmake, cli_text.cmake).
# include()d by them, not run on its own.

# json_ids(<out> <json text> <member or index>...): the integer array at that path as "1,2,3"
# (the form `muninn --tokens` takes and `muninn generate` prints).
function(json_ids out json_text)
  string(JSON n LENGTH "${json_text}" ${ARGN})
  math(EXPR last "${n} - 1")
  set(ids "")
  foreach(i RANGE ${last})
    string(JSON v GET "${json_text}" ${ARGN} ${i})
    list(APPEND ids ${v})
  endforeach()
  string(REPLACE ";" "," ids "${ids}")
  set(${out} "${ids}" PARENT_SCOPE)
endfunction()

# cli_run(<what> <stdout var> COMMAND <command> <arg>...): runs the command and returns its stdout;
# a non-zero exit stops the script with "<what> failed (rc N): <stderr>". Arguments reach the command
# unchanged, ';' included (PARSE_ARGV), so a prompt text can be passed as one argument.
function(cli_run what out_var)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "COMMAND")
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (rc ${rc}): ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# ---- the golden checks on DATA/tiny_f32 (cli_golden.cmake and cli_golden_cuda.cmake)

# cli_golden_inputs(): empties WORK and reads DATA/tiny_f32/inputs.json into `fixture`, `tokens` and `r`
# (the forward check: token ids and depth) and `prompt`, `expected`, `gsteps`, `gmax` (the greedy
# generate check).
macro(cli_golden_inputs)
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  set(fixture ${DATA}/tiny_f32)
  file(READ ${fixture}/inputs.json inputs)
  json_ids(tokens "${inputs}" tokens)
  string(JSON r GET "${inputs}" steps 1)
  json_ids(prompt "${inputs}" generate prompt)
  json_ids(expected "${inputs}" generate expected)
  string(JSON gsteps GET "${inputs}" generate steps)
  string(JSON gmax GET "${inputs}" generate max_new_tokens)
endmacro()

# cli_check_logits(<what> <tolerance>): WORK/logits.npy (written by `muninn forward --output`) equals
# the fixture's logits at depth r within <tolerance> (max |difference|, NPY_COMPARE), or the script stops.
function(cli_check_logits what tolerance)
  execute_process(COMMAND ${NPY_COMPARE} ${WORK}/logits.npy ${fixture}/logits_r${r}.npy ${tolerance}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} logits differ from the reference: ${out}${err}")
  endif()
endfunction()

# cli_golden_generate(<out> <what> [<extra flag>...]): runs the greedy generate check's command (with the
# extra flags) and returns the last line it printed (the generated ids).
function(cli_golden_generate out what)
  cli_run("${what}" stdout COMMAND ${EXE} generate --model ${fixture} --tokens ${prompt} --max-new-tokens ${gmax}
                                   --steps ${gsteps} --init-state zero --greedy ${ARGN})
  string(STRIP "${stdout}" stdout)
  string(REGEX REPLACE ".*\n" "" last_line "${stdout}")
  set(${out} "${last_line}" PARENT_SCOPE)
endfunction()
