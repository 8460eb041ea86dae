# Decides whether the CUDA target is configured, following MUNINN_ENABLE_CUDA (AUTO|ON|OFF).
# Sets MUNINN_HAVE_CUDA and, when the backend is wanted, enables the CUDA language and finds
# CUDAToolkit.
#
# Enabling a language is global to the whole build, so as a subproject (add_subdirectory,
# FetchContent) Muninn never does it on its own: AUTO there only uses CUDA when the consumer has
# already enabled it, and only ON makes Muninn enable it. The default is AUTO at the top level and
# OFF in a subproject (CMakeLists.txt).
set(MUNINN_HAVE_CUDA OFF)
string(TOUPPER "${MUNINN_ENABLE_CUDA}" _muninn_cuda_mode)
if(NOT _muninn_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MUNINN_ENABLE_CUDA must be AUTO, ON or OFF (got '${MUNINN_ENABLE_CUDA}')")
endif()

# Turns the backend on: the CUDA language (when not enabled yet) and the toolkit's libraries.
macro(_muninn_use_cuda)
  get_property(_muninn_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT CUDA IN_LIST _muninn_langs)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) is the target; sm_80 keeps Ampere users working.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
  endif()
  find_package(CUDAToolkit REQUIRED)
  set(MUNINN_HAVE_CUDA ON)
endmacro()

get_property(_muninn_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
if(_muninn_cuda_mode STREQUAL "OFF")
  # nothing to do
elseif(NOT MUNINN_TOP_LEVEL AND _muninn_cuda_mode STREQUAL "AUTO")
  # A subproject does not probe for nvcc: check_language would already set CMAKE_CUDA_COMPILER
  # in the consumer's cache. It follows the consumer's choice instead.
  if(CUDA IN_LIST _muninn_langs)
    _muninn_use_cuda()
  endif()
else()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    _muninn_use_cuda()
  elseif(_muninn_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "MUNINN_ENABLE_CUDA=ON but no CUDA compiler (nvcc) was found. "
                        "Install the CUDA Toolkit, put nvcc on PATH or set CMAKE_CUDA_COMPILER, "
                        "or configure with -DMUNINN_ENABLE_CUDA=OFF.")
  endif()
endif()
message(STATUS "Muninn: CUDA backend ${MUNINN_HAVE_CUDA} (MUNINN_ENABLE_CUDA=${MUNINN_ENABLE_CUDA})")
