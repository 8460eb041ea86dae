#pragma once
// The CALM fixture of tests/data/calm (written by tools/reference/make_calm_fixtures.py from
// calm_ref.py): where it lives, the reference's expected.json, and the generation settings of one
// of its "generate" cases. Shared by test_calm.cpp and the model cases (g++ and nvcc).
#include <cstdint>
#include <string>
#include <vector>

#include "muninn/io/json.hpp"
#include "muninn/runtime/calm_generate.hpp"

namespace muninn_test {

/// tests/data/calm with the trailing '/'.
inline const std::string calm_data = std::string(MUNINN_TEST_DATA) + "/calm/";

/// The reference's outputs (expected.json), read once.
inline const muninn::io::json& calm_expected() {
  static const muninn::io::json j = muninn::io::read_json_file(calm_data + "expected.json");
  return j;
}

/// A JSON array of numbers as floats.
inline std::vector<float> floats_of(const muninn::io::json& arr) {
  std::vector<float> v;
  for (const auto& x : arr.as_array()) v.push_back(float(x.as_double()));
  return v;
}

/// The settings of one of expected.json's "generate" cases: temperature, sampler, sample count,
/// seed and length, as the reference ran it.
inline muninn::calm_generate_options calm_generate_options_of(const muninn::io::json& c) {
  muninn::calm_generate_options o;
  o.temperature = c.at("temperature").as_double();
  o.sampler = c.at("sampler").as_string() == "exact" ? muninn::calm_sampler::exact : muninn::calm_sampler::approximate;
  if (const muninn::io::json* n = c.find("num_samples")) o.num_samples = n->as_int();
  o.seed = std::uint64_t(c.at("seed").as_int());
  o.max_length = c.at("max_length").as_int();
  return o;
}

}  // namespace muninn_test
