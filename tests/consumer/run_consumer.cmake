# Builds tests/consumer against Muninn, either installed (find_package) or as a subdirectory.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
set(common -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DMUNINN_ENABLE_CUDA=OFF)
if(MODE STREQUAL "installed")
  run(${CMAKE_COMMAND} -S ${MUNINN_SOURCE} -B ${WORK}/muninn-build ${common} -DMUNINN_BUILD_CLI=OFF
      -DMUNINN_BUILD_TESTS=OFF -DMUNINN_BUILD_BENCHMARKS=OFF -DMUNINN_BUILD_EXAMPLES=OFF -DMUNINN_BUILD_DOCS=OFF
      -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK}/muninn-build)
  run(${CMAKE_COMMAND} --install ${WORK}/muninn-build)
  run(${CMAKE_COMMAND} -S ${MUNINN_SOURCE}/tests/consumer -B ${WORK}/build ${common}
      -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCONSUMER_MODE=installed)
else()
  run(${CMAKE_COMMAND} -S ${MUNINN_SOURCE}/tests/consumer -B ${WORK}/build ${common}
      -DCONSUMER_MODE=subdirectory -DMUNINN_SOURCE=${MUNINN_SOURCE})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer ${MUNINN_SOURCE}/tests/data/huginn/tiny_f32)
