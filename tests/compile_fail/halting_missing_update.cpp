// Must NOT compile: a user's halting policy without `update`.
#include "muninn/model/arch.hpp"
struct no_update {
  using slot = muninn::slot::halting;
  static constexpr const char* name = "no_update";
  static constexpr bool early_exit = true;
  struct tracker {};
  static muninn::halting_options resolve(muninn::halting_options o) { return o; }
  static bool exits(const muninn::halting_options&) { return true; }
  static bool needs_logits(const muninn::halting_options&) { return false; }
  static bool needs_state(const muninn::halting_options&) { return true; }
  static tracker start(const muninn::halting_options&, const float*, std::int64_t, std::int64_t) { return {}; }
};
using bad = muninn::huginn_arch::with<no_update>;
bad instance;
