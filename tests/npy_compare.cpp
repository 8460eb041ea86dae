// npy_compare A.npy B.npy TOL: exits 0 when shapes match and max |a - b| <= TOL (prints the max).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "muninn/io/npy.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: npy_compare A.npy B.npy TOL\n");
    return 2;
  }
  try {
    const auto a = muninn::io::read_npy_f32(argv[1]);
    const auto b = muninn::io::read_npy_f32(argv[2]);
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
    return m <= std::atof(argv[3]) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_compare: %s\n", e.what());
    return 2;
  }
}
