// The Huginn family's two pre-norm combinations (pre-norm blocks with the concat adapter or
// additive injection), each with early exit compiled in; huginn.cpp holds the sandwich ones and
// the family's entry points (huginn_host.hpp says why they are two files).

#include "huginn_host.hpp"

namespace muninn::frontend::detail::huginn_host {

std::unique_ptr<loaded_model> prenorm_model(bool add, host_backend be, huginn_config cfg, const io::checkpoint& ck,
                                            lm_extras x, weight_format weights) {
  return add ? host_model<prenorm_add>(be, std::move(cfg), ck, std::move(x), weights)
             : host_model<prenorm_linear>(be, std::move(cfg), ck, std::move(x), weights);
}

}  // namespace muninn::frontend::detail::huginn_host
