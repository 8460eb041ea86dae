# On a terminal the long commands draw a progress bar on stderr and `generate` streams its tokens;
# piped, neither appears, and the streamed text equals the piped one. Needs `script` (util-linux)
# to give the command a terminal; without it only the piped half runs.
# Usage: cmake -DEXE=muninn -DDATA=<tests/data> -DCLI_DATA=<tests/cli/data> -DEXAMPLES=<examples/models>
#              -P cli_terminal.cmake
set(tiny ${DATA}/huginn/tiny_f32)
set(calls
  "score|score --model ${tiny} --data ${CLI_DATA}/mor_score.txt"
  "eval|eval --model ${tiny} --data ${CLI_DATA}/mor_score.txt --metric brierlm --block-size 8"
  "solve|solve --model ${DATA}/trm/trm_mlpt_f32 --data ${DATA}/trm/data/sudoku4 --limit 4"
  "trm demo|demo --model ${EXAMPLES}/trm_sudoku --problems 64"
  "scoring|demo --model ${EXAMPLES}/mor_demo --problems 8")
find_program(SCRIPT_TOOL script)
foreach(entry ${calls})
  string(REPLACE "|" ";" entry "${entry}")
  list(GET entry 0 label)
  list(GET entry 1 call)
  separate_arguments(args UNIX_COMMAND "${call}")
  execute_process(COMMAND ${EXE} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR out MATCHES "\r" OR err MATCHES "\r")
    message(FATAL_ERROR "muninn ${call} piped: rc ${rc}, or a progress bar in a pipe:\n${out}${err}")
  endif()
  if(SCRIPT_TOOL)
    execute_process(COMMAND ${SCRIPT_TOOL} -qec "${EXE} ${call}" /dev/null RESULT_VARIABLE rc OUTPUT_VARIABLE tty)
    if(NOT rc EQUAL 0 OR NOT tty MATCHES "\r${label} \\[#+\\] [0-9]+/[0-9]+")
      message(FATAL_ERROR "muninn ${call} on a terminal: no finished '${label}' progress bar (rc ${rc}):\n${tty}")
    endif()
  endif()
endforeach()
# The TRM demo says how many puzzles it ran.
execute_process(COMMAND ${EXE} demo --model ${EXAMPLES}/trm_sudoku --problems 64 OUTPUT_VARIABLE out)
if(NOT out MATCHES "^task: 64 held-out puzzles of ")
  message(FATAL_ERROR "the TRM demo with --problems 64 does not say it ran 64 puzzles:\n${out}")
endif()
# generate: streamed on a terminal (the text is written token by token, the same text as piped)
set(gen generate --model ${DATA}/llama/tiny_text --prompt "The cat sat" --max-new-tokens 12)
execute_process(COMMAND ${EXE} ${gen} RESULT_VARIABLE rc OUTPUT_VARIABLE piped)
execute_process(COMMAND ${EXE} ${gen} --stream on RESULT_VARIABLE rc2 OUTPUT_VARIABLE streamed)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT piped STREQUAL streamed)
  message(FATAL_ERROR "--stream on prints other text than a piped run:\n${piped}\n---\n${streamed}")
endif()
if(SCRIPT_TOOL)
  string(REPLACE ";" " " gen_line "${gen}")
  execute_process(COMMAND ${SCRIPT_TOOL} -qec "${EXE} generate --model ${DATA}/llama/tiny_text --prompt 'The cat sat' --max-new-tokens 12"
                          /dev/null RESULT_VARIABLE rc OUTPUT_VARIABLE tty)
  string(REPLACE "\r\n" "\n" tty "${tty}")
  string(REGEX REPLACE "muninn: [^\n]*\n" "" tty "${tty}")  # stderr's report lines share the terminal
  string(FIND "${tty}" "${piped}" at)
  if(NOT rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "generate on a terminal (streamed by default) prints other text:\n${tty}\nexpected:\n${piped}")
  endif()
endif()
message(STATUS "progress bars and streaming only on a terminal")
