# Helpers of Muninn's own test suite (tests/CMakeLists.txt); not part of the installed package.

# muninn_add_test(<name> <source>...): a GoogleTest binary, registered with ctest (label "unit")
# and built by the muninn_unit_tests target. A missing source is a configure error: a test that
# silently drops out of the suite would look like a passing one.
function(muninn_add_test name)
  foreach(src IN LISTS ARGN)
    get_filename_component(path ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    if(NOT EXISTS ${path})
      message(FATAL_ERROR "muninn_add_test(${name}): source ${path} does not exist")
    endif()
  endforeach()
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE muninn::muninn muninn_project_options GTest::gtest GTest::gmock
                                        GTest::gtest_main Threads::Threads)
  target_compile_definitions(${name} PRIVATE MUNINN_TEST_DATA="${MUNINN_TEST_DATA_IN_BINARIES}"
                                             MUNINN_TEST_DATA_DIR="${MUNINN_TEST_DATA_IN_BINARIES}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 ${MUNINN_TEST_WORKING_DIRECTORY} PROPERTIES TIMEOUT 600 LABELS unit)
  add_dependencies(muninn_unit_tests ${name})
endfunction()

# muninn_add_test_group(<name> <source>...): muninn_add_test with several test files, compiled as
# one translation unit when MUNINN_UNITY_BUILD is ON. Why: each test file generates the same
# model, kernel and reader templates again at -O3 (and under the sanitizers), and a group generates
# them once. The files must not share a file-local name: each keeps its code in a namespace named
# after the file. GCC collects its heap sooner (as for the front-end's groups), which keeps the
# compiler's memory per group lower for a few percent of CPU; the generated code is the same.
function(muninn_add_test_group name)
  muninn_add_test(${name} ${ARGN})
  if(MUNINN_UNITY_BUILD)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 0)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # -Wno-subobject-linkage: GCC warns when a class has a base in an anonymous namespace unless
      # both are in the main file; in a unity file every test file is an included one, so each
      # TEST_F of a fixture in an anonymous namespace would warn although nothing changed.
      target_compile_options(${name} PRIVATE --param=ggc-min-expand=30 --param=ggc-min-heapsize=65536
                                             -Wno-subobject-linkage)
    endif()
  endif()
endfunction()
