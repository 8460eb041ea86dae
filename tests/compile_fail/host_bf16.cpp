// Must NOT compile: the host backend computes in fp32 only.
#include "muninn/families/huginn/arch.hpp"
muninn::model<muninn::host_backend, muninn::bf16>* instance = nullptr;
static_assert(sizeof(muninn::model<muninn::host_backend, muninn::bf16>) > 0);
