# MUNINN_LTO: link-time optimisation for the front-end library and the programs that link it (the
# CLI, the server, the Python module, the front end's test and benchmark).
#
# Why: every unit of the front end generates the model code its families share (attention, GEMM,
# the checkpoint readers, the thread pool) again, and code generation at -O3 is most of a unit's
# CPU. With LTO a unit's compile stops after parsing and the early passes and writes GCC's
# intermediate code; the link then generates each function once, in parallel partitions. A clean
# CLI build costs about a third less CPU (docs/performance.md, "Build cost"). Each unit keeps its
# own optimisation level (GCC records it per function), so the -O1 glue stays -O1.
#
# The price: a program that links the front end generates its code at the link, so each such
# program pays for the code it uses; only the programs below link it. The CUDA build keeps LTO off
# (its front end holds an nvcc unit), and so does a compiler without LTO support, with a message.
option(MUNINN_LTO "Link-time optimisation for the front-end library and the programs that link it (CLI, server, Python module): a clean CLI build costs less CPU" OFF)

set(MUNINN_LTO_ACTIVE OFF)
if(MUNINN_LTO)
  if(MUNINN_HAVE_CUDA)
    message(STATUS "MUNINN_LTO: off, the CUDA backend is on (the front end holds an nvcc unit)")
  else()
    include(CheckIPOSupported)
    check_ipo_supported(RESULT _muninn_ipo_ok OUTPUT _muninn_ipo_why LANGUAGES CXX)
    if(_muninn_ipo_ok)
      set(MUNINN_LTO_ACTIVE ON)
    else()
      message(STATUS "MUNINN_LTO: off, ${CMAKE_CXX_COMPILER} cannot link-time optimise: ${_muninn_ipo_why}")
    endif()
  endif()
endif()

# muninn_lto(<target>...): turns LTO on for these targets when MUNINN_LTO is active. Name every
# target that compiles or links the front end's objects: they hold no machine code, so GCC
# optimises at any link that takes them, and a named target's link does it with the units' options
# (-flto=auto: the partitions on every core).
function(muninn_lto)
  if(MUNINN_LTO_ACTIVE)
    set_target_properties(${ARGN} PROPERTIES INTERPROCEDURAL_OPTIMIZATION ON)
  endif()
endfunction()
