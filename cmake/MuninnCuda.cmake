# Decides whether the CUDA target is configured, following MUNINN_ENABLE_CUDA (AUTO|ON|OFF).
# Sets MUNINN_HAVE_CUDA and, when ON, enables the CUDA language and finds CUDAToolkit.
set(MUNINN_HAVE_CUDA OFF)
string(TOUPPER "${MUNINN_ENABLE_CUDA}" _muninn_cuda_mode)
if(NOT _muninn_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MUNINN_ENABLE_CUDA must be AUTO, ON or OFF (got '${MUNINN_ENABLE_CUDA}')")
endif()
if(NOT _muninn_cuda_mode STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) is the target; sm_80 keeps Ampere users working.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(MUNINN_HAVE_CUDA ON)
  elseif(_muninn_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "MUNINN_ENABLE_CUDA=ON but no CUDA compiler (nvcc) was found. "
                        "Install the CUDA Toolkit, put nvcc on PATH or set CMAKE_CUDA_COMPILER, "
                        "or configure with -DMUNINN_ENABLE_CUDA=OFF.")
  endif()
endif()
message(STATUS "Muninn: CUDA backend ${MUNINN_HAVE_CUDA} (MUNINN_ENABLE_CUDA=${MUNINN_ENABLE_CUDA})")
