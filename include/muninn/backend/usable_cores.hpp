#pragma once
/// \file
/// \brief How many cores this process may run on: its CPU affinity mask and its cgroup's CPU quota.

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace muninn {
namespace detail {

/// \brief Cores granted by a cgroup CPU quota (`quota` µs of CPU per `period` µs), rounded up; 0 when unlimited.
inline int cores_of_quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return int(std::max<long long>(1, (quota + period - 1) / period));
}

/// \brief The cgroup v2 limit in `dir`'s `cpu.max` ("max 100000" or "200000 100000"); 0 when none.
inline int cgroup2_cores(const std::string& dir) {
  std::ifstream f(dir + "/cpu.max");
  std::string quota;
  long long period = 0;
  if (!(f >> quota >> period) || quota == "max") return 0;
  try {
    return cores_of_quota(std::stoll(quota), period);
  } catch (...) {
    return 0;
  }
}

/// \brief The cgroup v1 limit in `dir`'s `cpu.cfs_quota_us` / `cpu.cfs_period_us`; 0 when none.
inline int cgroup1_cores(const std::string& dir) {
  std::ifstream q(dir + "/cpu.cfs_quota_us"), p(dir + "/cpu.cfs_period_us");
  long long quota = 0, period = 0;
  if (!(q >> quota) || !(p >> period)) return 0;
  return cores_of_quota(quota, period);
}

/// \brief The tightest CPU quota on the path from this process's cgroup up to the root; 0 when none.
///
/// Reads `/proc/self/cgroup`: the v2 line `0::/path` and the v1 line whose controllers include
/// `cpu`. A container usually mounts its own cgroup at the root of `/sys/fs/cgroup`, so the root
/// itself is looked at as well.
inline int cgroup_cores() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  int best = 0;
  const auto take = [&](int c) {
    if (c > 0 && (best == 0 || c < best)) best = c;
  };
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
    if (!v2 && ("," + controllers + ",").find(",cpu,") == std::string::npos) continue;
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/" + controllers;
    for (;;) {
      const std::string dir = root + (path == "/" ? "" : path);
      take(v2 ? cgroup2_cores(dir) : cgroup1_cores(dir));
      if (path.empty() || path == "/") break;
      path = path.substr(0, path.rfind('/'));
      if (path.empty()) path = "/";
    }
  }
  return best;
}

}  // namespace detail

/// \brief Cores this process may use: the CPUs in its affinity mask (`taskset`, `numactl`,
/// container cpusets), capped by its cgroup's CPU quota (`docker --cpus`, Kubernetes limits).
///
/// Read once per call; at least 1. Where neither is available, `std::thread::hardware_concurrency`.
inline int usable_cores() {
  int n = int(std::thread::hardware_concurrency());
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
  const int quota = detail::cgroup_cores();
  if (quota > 0) n = std::min(n, quota);
#endif
  return std::max(n, 1);
}

}  // namespace muninn
