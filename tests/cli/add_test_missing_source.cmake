# muninn_add_test (cmake/MuninnTestHelpers.cmake) registers a test whose source exists, and a
# missing source stops the configure step with a message naming the file: a test must never drop
# out of the suite silently.
# Usage: cmake -DMUNINN_SOURCE=<muninn source dir> -DWORK=dir -DGENERATOR=... -P add_test_missing_source.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/src)
file(WRITE ${WORK}/src/present.cpp "int main() { return 0; }\n")
# Stand-ins for the targets the helper links, so that only the source check can fail.
file(WRITE ${WORK}/src/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.24)
project(add_test_check LANGUAGES CXX)
include(GoogleTest)
foreach(t muninn_project_options muninn::muninn GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
  string(MAKE_C_IDENTIFIER ${t} id)
  add_library(${id} INTERFACE)
  if(NOT t STREQUAL id)
    add_library(${t} ALIAS ${id})
  endif()
endforeach()
add_custom_target(muninn_unit_tests)
include(${MUNINN_SOURCE}/cmake/MuninnTestHelpers.cmake)
muninn_add_test(test_present present.cpp)
if(WITH_MISSING)
  muninn_add_test(test_missing test_missing.cpp)
endif()
]=])

function(configure out_rc out_text with_missing)
  file(REMOVE_RECURSE ${WORK}/build)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/src -B ${WORK}/build -G ${GENERATOR}
                          -DMUNINN_SOURCE=${MUNINN_SOURCE} -DWITH_MISSING=${with_missing}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_text} "${out}${err}" PARENT_SCOPE)
endfunction()

configure(rc text OFF)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring with an existing test source failed:\n${text}")
endif()
configure(rc text ON)
if(rc EQUAL 0)
  message(FATAL_ERROR "muninn_add_test(test_missing test_missing.cpp) configured without an error")
endif()
if(NOT text MATCHES "test_missing\\.cpp")
  message(FATAL_ERROR "the configure error does not name test_missing.cpp:\n${text}")
endif()
message(STATUS "a missing test source is a configure error")
