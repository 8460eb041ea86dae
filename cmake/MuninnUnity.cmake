# muninn_unity_groups(<target> GROUP <name> <sources>... [GROUP <name> <sources>...]): with
# MUNINN_UNITY_BUILD, compiles each group of the target's C++ sources as one translation unit.
#
# Why: the front-end, server and CLI files each include the same headers, whose inline functions and
# templates (GEMM and attention kernels, checkpoint, safetensors, pickle and JSON readers, the thread
# pool, standard containers) every file generates again at -O3; a group generates them once. Two
# groups per target keep two cores busy where a target's objects wait for another target.
# Sources not named (the CUDA unit) are compiled on their own. Memory and CPU per group:
# docs/performance.md, "Build cost".
function(muninn_unity_groups target)
  if(NOT MUNINN_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  set(group "")
  foreach(arg IN LISTS ARGN)
    if(arg STREQUAL "GROUP")
      set(expect_name ON)
    elseif(expect_name)
      set(group "${target}_${arg}")
      set(expect_name OFF)
    else()
      set_source_files_properties(${arg} PROPERTIES UNITY_GROUP ${group})
    endif()
  endforeach()
endfunction()
