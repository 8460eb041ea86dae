# The README's docs command works right after its first command, `bash tools/demo.sh`: it builds
# the `docs` target in the build tree that demo.sh configures (same preset or binary dir), and
# tools/setup.sh, which demo.sh runs first, installs doxygen.
# Usage: cmake -DSOURCE=<muninn source dir> -P readme_docs_command.cmake
file(READ ${SOURCE}/README.md readme)
file(READ ${SOURCE}/tools/demo.sh demo)
file(READ ${SOURCE}/tools/setup.sh setup)
file(READ ${SOURCE}/CMakePresets.json presets)

if(NOT readme MATCHES "bash tools/demo.sh")
  message(FATAL_ERROR "README.md no longer starts from `bash tools/demo.sh`; update this test")
endif()
if(NOT demo MATCHES "cmake --preset ([a-z]+)")
  message(FATAL_ERROR "tools/demo.sh configures no preset")
endif()
set(preset ${CMAKE_MATCH_1})
if(NOT demo MATCHES "bash tools/setup.sh" OR NOT setup MATCHES "need\\+=\\(doxygen\\)")
  message(FATAL_ERROR "tools/demo.sh must run tools/setup.sh, and setup.sh must install doxygen")
endif()

# The preset's binary dir, for a README that names the directory instead of the preset.
string(JSON n LENGTH "${presets}" configurePresets)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${presets}" configurePresets ${i} name)
  if(name STREQUAL preset)
    string(JSON dir GET "${presets}" configurePresets ${i} binaryDir)
    string(REPLACE "\${sourceDir}/" "" dir "${dir}")
  endif()
endforeach()

string(REGEX MATCH "cmake --build (--preset [a-z]+|[^ `]+) --target docs" cmd "${readme}")
if(NOT cmd)
  message(FATAL_ERROR "README.md has no `cmake --build ... --target docs` command")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL "--preset ${preset}" AND NOT CMAKE_MATCH_1 STREQUAL "${dir}")
  message(FATAL_ERROR "README.md builds the docs with '${cmd}', but tools/demo.sh configures "
                      "the '${preset}' preset (${dir}): use `cmake --build --preset ${preset} --target docs`")
endif()
message(STATUS "README docs command '${cmd}' matches tools/demo.sh's preset '${preset}'")
