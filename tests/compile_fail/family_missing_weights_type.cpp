// Must NOT compile: a family that declares its config but not the type of its weights.
#include "muninn/families/huginn/arch.hpp"
struct config_only {
  using slot = muninn::slot::family;
  static constexpr const char* name = "config_only";
  using config_type = muninn::model_config;
};
using bad = muninn::huginn_arch::with<config_only>;
bad instance;
