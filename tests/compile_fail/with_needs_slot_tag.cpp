// Must NOT compile: arch<>::with<> places a policy by its slot tag, and this one has none.
#include "muninn/families/huginn/arch.hpp"
struct untagged {
  static constexpr const char* name = "untagged";
};
using bad = muninn::huginn_arch::with<untagged>;
bad instance;
