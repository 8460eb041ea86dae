// Must NOT compile: Mixture-of-Recursions' router in an arch whose family carries no router state.
#include <cstdint>
#include <vector>

#include "muninn/families/llama/arch.hpp"
#include "muninn/families/mor/arch.hpp"
#include "muninn/model/model.hpp"
using bad = muninn::mor_expert_arch::with<muninn::family::llama>;
std::vector<float> run(const muninn::model<muninn::host_backend, float, bad>& m) {
  return m.forward(std::vector<std::int32_t>{1});
}
