#pragma once
/// \file
/// \brief The range check of a float setting read from a config file (JSON or YAML): finite and inside the
/// range where it means something, or one error naming the file and the field.

#include <cmath>
#include <limits>
#include <string>

#include "muninn/core/error.hpp"

namespace muninn::io {

/// \brief `value` when it is finite and in [lo, hi] ((lo, hi] with `lo_open`); else throws muninn::error
/// "path: field 'name' is inf; it must be a finite number in (0, 1]". YAML spells infinities and NaN (`.inf`,
/// `.nan`), and JSON's finite extremes overflow a float: neither gets past this.
inline double float_setting(double value, double lo, double hi, bool lo_open, const std::string& path,
                            const std::string& name) {
  if (std::isfinite(value) && (lo_open ? value > lo : value >= lo) && value <= hi) return value;
  fail(path, ": field '", name, "' is ", value, "; it must be a finite number in ", lo_open ? "(" : "[", lo, ", ", hi,
       "]");
}

/// \brief A positive setting stored as a float (an epsilon, a RoPE base): in (0, FLT_MAX], and not 0 once
/// narrowed to float.
inline float positive_float_setting(double value, const std::string& path, const std::string& name) {
  const double v = float_setting(value, 0, std::numeric_limits<float>::max(), true, path, name);
  if (!(static_cast<float>(v) > 0)) fail(path, ": field '", name, "' is ", value, ", which is 0 as a float");
  return static_cast<float>(v);
}

}  // namespace muninn::io
