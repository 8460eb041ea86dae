# `muninn demo --model examples/models/trm_sudoku` prints the lines that tools/reference/eval_trm_demo.py
# measured with the PyTorch reference on the same model and puzzles ("lines" of the model's
# expected.json): exact-puzzle accuracy after 1, 2, 4, 8, 16 supervision steps and with Q-halt.
# Usage: cmake -DEXE=muninn -DMODEL=<examples/models/trm_sudoku> -P trm_demo_check.cmake
file(READ ${MODEL}/expected.json doc)
string(JSON n LENGTH "${doc}" lines)
execute_process(COMMAND ${EXE} demo --model ${MODEL} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON line GET "${doc}" lines ${i})
  string(FIND "${out}" "\n${line}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the demo does not print the reference's line '${line}':\n${out}")
  endif()
endforeach()
message(STATUS "trm demo: ${n} lines as the reference measured them")
