// npy_compare A.npy B.npy TOL [I]: exits 0 when shapes match and max |a - b| <= TOL (prints the max and
// "argmax per row of B: i,j,..." for a 2-D B, the reference's greedy choice at each position).
// With I, B is replaced by its slice B[I] along the first axis (one recorded step of a fixture).
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>

#include "muninn/io/npy.hpp"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: npy_compare A.npy B.npy TOL [I]\n");
    return 2;
  }
  try {
    const auto a = muninn::io::read_npy_f32(argv[1]);
    auto b = muninn::io::read_npy_f32(argv[2]);
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
