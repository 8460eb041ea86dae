# The installed muninn is a tool: installed to a prefix, and that prefix then moved elsewhere (so
# neither the configure-time install path nor the build tree is where it looks), `muninn demo`
# finds its model beside itself in <prefix>/share/muninn/models and runs it; the TRM demo runs
# from the installed copy too (its data path is relative to the model folder).
# Usage: cmake -DBUILD_DIR=<build> -DWORK=<dir> -P cli_install.cmake
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/first
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
file(RENAME ${WORK}/first ${WORK}/moved)
set(prefix ${WORK}/moved)
set(exe ${prefix}/bin/muninn)
execute_process(COMMAND ${exe} demo --problems 8 --depths 1 WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed muninn demo: rc ${rc}\n${out}${err}")
endif()
if(NOT out MATCHES "model ${prefix}/share/muninn/models/demo ")
  message(FATAL_ERROR "installed muninn demo did not run the model beside it (${prefix}/share/muninn/models/demo):\n${out}")
endif()
execute_process(COMMAND ${exe} demo --model ${prefix}/share/muninn/models/trm_sudoku --problems 8 WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "task: 8 held-out puzzles of ${prefix}/share/muninn/models/trm_sudoku/")
  message(FATAL_ERROR "installed TRM demo: rc ${rc}\n${out}${err}")
endif()
message(STATUS "the installed muninn runs its demos from ${prefix}")
