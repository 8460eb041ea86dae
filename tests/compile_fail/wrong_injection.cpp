// Must NOT compile: concat_linear injection without a recurrent sharing policy.
#include "muninn/families/huginn/arch.hpp"
using bad = muninn::arch<muninn::block::pre_norm, muninn::injection::concat_linear, muninn::state_init::zero,
                         muninn::sharing::none>;
bad instance;
