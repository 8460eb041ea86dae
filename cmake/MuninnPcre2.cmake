# The imported target muninn::pcre2 (libpcre2-8), which the tokenizer's regular expressions need. Used by
# Muninn's own build and by its installed package configuration, so a consumer finds the same library.
if(NOT TARGET muninn::pcre2)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(MUNINN_PC_PCRE2 QUIET libpcre2-8)
  endif()
  find_path(MUNINN_PCRE2_INCLUDE_DIR pcre2.h HINTS ${MUNINN_PC_PCRE2_INCLUDE_DIRS})
  find_library(MUNINN_PCRE2_LIBRARY NAMES pcre2-8 HINTS ${MUNINN_PC_PCRE2_LIBRARY_DIRS})
  if(NOT MUNINN_PCRE2_INCLUDE_DIR OR NOT MUNINN_PCRE2_LIBRARY)
    message(FATAL_ERROR "Muninn's tokenizer needs PCRE2 (8-bit): install libpcre2-dev (Debian/Ubuntu) or "
                        "pcre2-devel, or set MUNINN_PCRE2_INCLUDE_DIR and MUNINN_PCRE2_LIBRARY")
  endif()
  # GLOBAL: Muninn added with add_subdirectory links it from the consumer's directories too.
  add_library(muninn::pcre2 UNKNOWN IMPORTED GLOBAL)
  set_target_properties(muninn::pcre2 PROPERTIES
    IMPORTED_LOCATION "${MUNINN_PCRE2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MUNINN_PCRE2_INCLUDE_DIR}")
endif()
