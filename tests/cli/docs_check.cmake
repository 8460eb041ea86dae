# The Doxygen API reference builds without a warning (WARN_AS_ERROR=FAIL_ON_WARNINGS), shows
# docs/demo.png on the demo page, and has namespace pages that list the public API.
# Usage: cmake -DBUILD_DIR=<muninn build dir> -DHTML=<its docs/html> -P docs_check.cmake
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target docs
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the docs target failed (${rc}):\n${out}\n${err}")
endif()

# require_in(<file> <regex> <why>): the HTML file exists and matches, or the script stops.
function(require_in file regex why)
  if(NOT EXISTS ${HTML}/${file})
    message(FATAL_ERROR "${HTML}/${file} is missing: ${why}")
  endif()
  file(READ ${HTML}/${file} text)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${HTML}/${file} does not match '${regex}': ${why}")
  endif()
endfunction()

if(NOT EXISTS ${HTML}/demo.png)
  message(FATAL_ERROR "demo.png was not copied into ${HTML} (IMAGE_PATH)")
endif()
require_in(md_docs_demo.html "<img src=\"demo.png\"" "the demo page shows its plot")
require_in(index.html "<img src=\"demo.png\"" "the main page (README.md) shows the demo plot")
require_in(namespaces.html "namespacemuninn.html" "the namespace list has muninn")
require_in(namespacemuninn.html ">model</a>" "namespace muninn lists the model template")
require_in(namespacemuninn.html ">generate</a>" "namespace muninn lists generate()")
require_in(namespacemuninn_1_1io.html ">tokenizer</a>" "namespace muninn::io lists the tokenizer")
message(STATUS "docs ok: ${HTML}")
