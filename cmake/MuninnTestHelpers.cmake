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
