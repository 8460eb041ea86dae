// Must NOT compile: a state init policy placed by position that has no `fill`.
#include "muninn/families/huginn/arch.hpp"
struct no_fill {
  static constexpr const char* name = "no_fill";
};
using bad = muninn::arch<muninn::block::sandwich, muninn::injection::concat_linear, no_fill>;
bad instance;
