# Builds tests/consumer against Muninn: installed (find_package), as a subdirectory, or through
# FetchContent with a local SOURCE_DIR. The two subproject modes leave MUNINN_ENABLE_CUDA at its
# default, which must keep CUDA out of the consumer's build (tests/consumer/CMakeLists.txt checks);
# where nvcc is found, the subdirectory mode also checks that MUNINN_ENABLE_CUDA=ON still works.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
# Packaging is under test, not code generation: -O0 compiles the one-file consumer in 13 s of CPU
# instead of 30 s at -O3, and the tiny checkpoint runs in well under a second either way.
set(common -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
set(consumer -S ${MUNINN_SOURCE}/tests/consumer -DCONSUMER_MODE=${MODE} -DMUNINN_SOURCE=${MUNINN_SOURCE})
if(MODE STREQUAL "installed")
  run(${CMAKE_COMMAND} -S ${MUNINN_SOURCE} -B ${WORK}/muninn-build ${common} -DMUNINN_ENABLE_CUDA=OFF
      -DMUNINN_BUILD_CLI=OFF -DMUNINN_BUILD_TESTS=OFF -DMUNINN_BUILD_BENCHMARKS=OFF -DMUNINN_BUILD_EXAMPLES=OFF
      -DMUNINN_BUILD_DOCS=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK}/muninn-build)
  run(${CMAKE_COMMAND} --install ${WORK}/muninn-build)
  run(${CMAKE_COMMAND} ${consumer} -B ${WORK}/build ${common} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  run(${CMAKE_COMMAND} ${consumer} -B ${WORK}/build ${common})
  find_program(NVCC nvcc PATHS /usr/local/cuda/bin)
  if(MODE STREQUAL "subdirectory" AND NVCC)
    run(${CMAKE_COMMAND} ${consumer} -B ${WORK}/build-cuda-on ${common} -DMUNINN_ENABLE_CUDA=ON
        -DCMAKE_CUDA_COMPILER=${NVCC} -DEXPECT_CUDA=ON)
  endif()
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer ${MUNINN_SOURCE}/tests/data/huginn/tiny_f32)
