// Must NOT compile: a user's per-token halting rule without `update`.
#include "muninn/families/huginn/arch.hpp"
struct no_update {
  static constexpr const char* name = "no_update";
  struct tracker {};
  static muninn::halting_options resolve(muninn::halting_options o) { return o; }
  static bool exits(const muninn::halting_options&) { return true; }
  static bool needs_logits(const muninn::halting_options&) { return false; }
  static tracker start(const muninn::halting_options&, const float*, std::int64_t, std::int64_t) { return {}; }
};
using bad = muninn::huginn_arch::with<muninn::halting::on_host<no_update>>;
bad instance;
