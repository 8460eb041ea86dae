# Compiles SRC and passes only if compilation fails with a diagnostic matching REGEX.
execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must be rejected")
endif()
string(REGEX MATCH "${REGEX}" found "${out}${err}")
if(NOT found)
  message(FATAL_ERROR "${SRC} failed without the expected message '${REGEX}':\n${err}")
endif()
