# The imported target muninn::yaml (yaml-cpp), which reading Mixture-of-Recursions settings from the
# reference's Hydra YAML needs. Used by Muninn's own build and by its installed package configuration.
if(NOT TARGET muninn::yaml)
  find_package(yaml-cpp CONFIG QUIET)
  if(TARGET yaml-cpp::yaml-cpp)
    set(MUNINN_YAML_TARGET yaml-cpp::yaml-cpp)
  elseif(TARGET yaml-cpp)
    set(MUNINN_YAML_TARGET yaml-cpp)
  else()
    message(FATAL_ERROR "Muninn reads Hydra YAML configs with yaml-cpp: install libyaml-cpp-dev (Debian/Ubuntu) "
                        "or yaml-cpp-devel")
  endif()
  add_library(muninn::yaml INTERFACE IMPORTED GLOBAL)
  set_target_properties(muninn::yaml PROPERTIES INTERFACE_LINK_LIBRARIES ${MUNINN_YAML_TARGET})
endif()
