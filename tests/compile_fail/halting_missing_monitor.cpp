// Must NOT compile: a halting policy with no per-call exit test (`monitor`).
#include "muninn/families/huginn/arch.hpp"
struct no_monitor {
  using slot = muninn::slot::halting;
  static constexpr const char* name = "no_monitor";
  static constexpr bool early_exit = true;
  static muninn::halting_options resolve(muninn::halting_options o) { return o; }
  static bool exits(const muninn::halting_options&) { return true; }
  static bool needs_logits(const muninn::halting_options&) { return false; }
};
using bad = muninn::huginn_arch::with<no_monitor>;
bad instance;
