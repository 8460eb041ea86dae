// npy_compare A.npy B.npy TOL [I]: exits 0 when shapes match and max |a - b| <= TOL (prints the max and
// "argmax per row of B: i,j,..." for a 2-D B, the reference's greedy choice at each position).
// With I, B is replaced by its slice B[I] along the first axis (one recorded step of a fixture).
// B may also be json:FILE:KEY/KEY/INDEX/...: a flat number list of a JSON fixture (such as
// tests/data/calm/expected.json), taken in A's shape when it holds as many values.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>

#include <string>

#include "muninn/io/json.hpp"
#include "muninn/io/npy.hpp"

namespace {

// json:FILE:PATH, PATH's parts being object keys or array indices, as an npy array of A's shape.
muninn::io::npy_array<float> json_values(const std::string& spec, const std::vector<std::int64_t>& shape) {
  const std::size_t colon = spec.find(':', 5);
  if (colon == std::string::npos) throw std::runtime_error("json:FILE:PATH expected, got " + spec);
  const muninn::io::json root = muninn::io::read_json_file(spec.substr(5, colon - 5));
  const muninn::io::json* at = &root;
  std::string path = spec.substr(colon + 1);
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string part = path.substr(0, slash);
    path = slash == std::string::npos ? "" : path.substr(slash + 1);
    at = !part.empty() && std::isdigit(static_cast<unsigned char>(part[0])) ? &(*at)[std::stoul(part)] : &at->at(part);
  }
  muninn::io::npy_array<float> out;
  for (const auto& v : at->as_array()) out.data.push_back(float(v.as_double()));
  std::size_t n = 1;
  for (auto d : shape) n *= std::size_t(d);
  out.shape = n == out.data.size() ? shape : std::vector<std::int64_t>{std::int64_t(out.data.size())};
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: npy_compare A.npy B.npy TOL [I]\n");
    return 2;
  }
  try {
    const auto a = muninn::io::read_npy_f32(argv[1]);
    const std::string b_spec = argv[2];
    auto b = b_spec.rfind("json:", 0) == 0 ? json_values(b_spec, a.shape) : muninn::io::read_npy_f32(argv[2]);
    if (argc == 5) {
      const long long i = std::atoll(argv[4]);
      if (b.shape.empty() || i < 0 || i >= b.shape[0]) {
        std::fprintf(stderr, "npy_compare: index %lld is outside the first axis of %s\n", i, argv[2]);
        return 2;
      }
      const std::size_t n = b.data.size() / std::size_t(b.shape[0]);
      b.data.assign(b.data.begin() + std::ptrdiff_t(std::size_t(i) * n), b.data.begin() + std::ptrdiff_t(std::size_t(i + 1) * n));
      b.shape.erase(b.shape.begin());
    }
    if (a.shape != b.shape) {
      std::printf("shape mismatch\n");
      return 1;
    }
    double m = 0;
    for (std::size_t i = 0; i < a.data.size(); ++i) {
      const double d = std::fabs(double(a.data[i]) - double(b.data[i]));
      if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
    }
    std::printf("max |diff| = %.3g\n", m);
    if (b.shape.size() == 2 && b.shape[1] > 0) {
      std::printf("argmax per row of B: ");
      for (std::int64_t r = 0; r < b.shape[0]; ++r) {
        const float* row = b.data.data() + r * b.shape[1];
        std::int64_t best = 0;
        for (std::int64_t v = 1; v < b.shape[1]; ++v)
          if (row[v] > row[best]) best = v;
        std::printf("%s%lld", r ? "," : "", (long long)best);
      }
      std::printf("\n");
    }
    return m <= std::atof(argv[3]) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_compare: %s\n", e.what());
    return 2;
  }
}
