// Must NOT compile: a block policy put in the injection slot.
#include "muninn/families/huginn/arch.hpp"
using bad = muninn::arch<muninn::block::sandwich, muninn::block::pre_norm>;
bad instance;
