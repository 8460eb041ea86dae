#!/usr/bin/env bash
# Builds, on a machine without a GPU, everything tools/cuda_run.sh runs on a GPU machine: the CUDA
# tests, the CUDA benchmarks and the CLI with --device cuda (tools/cuda_run.plan), for sm_90
# (H100, H200), and packs them into one folder that travels with the working tree:
#
#   DIR/bin/ tests/ benchmarks/   stripped binaries (static CUDA runtime, RUNPATH $ORIGIN/../lib)
#   DIR/lib/                      the shared libraries they need that a CUDA machine may lack
#                                 (Google Benchmark, yaml-cpp, PCRE2); cuBLAS, glibc and
#                                 libstdc++ are the GPU machine's own
#   DIR/manifest.txt              what was built, from which commit, and the run plan
#
# Usage: tools/cuda_build.sh [--host] [--jobs N] [DIR]
#   DIR      default build/cuda-run (build/host-run with --host); the build tree is DIR-build
#            (the host preset's build/host with --host)
#   --host   pack the host twins of the plan instead (the rehearsal: tools/cuda_run.sh runs the
#            same sequence with them on this machine)
#   --jobs   parallel compile jobs (default 2)
# Environment: MUNINN_CUDA_ARCHS (default 90-real) is CMAKE_CUDA_ARCHITECTURES; MUNINN_RUN_MAX_MIB
# (default 40) is the size the folder must stay under.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=cuda
jobs=2
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --host) mode=host ;;
    --jobs) jobs="$2"; shift ;;
    --jobs=*) jobs="${1#--jobs=}" ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cuda_build: unknown option '$1'" >&2; exit 2 ;;
    *) dir="$1" ;;
  esac
  shift
done
[ -n "$dir" ] || dir=build/$mode-run
dir=${dir%/}
max_mib=${MUNINN_RUN_MAX_MIB:-40}
archs=${MUNINN_CUDA_ARCHS:-90-real}
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"

# ---- the plan: kind, CUDA name, host twin, timeout (tools/cuda_run.plan)
plan_col=2
[ "$mode" = host ] && plan_col=3
mapfile -t plan < <(grep -v '^[[:space:]]*\(#\|$\)' tools/cuda_run.plan)
binary_targets=()
for line in "${plan[@]}"; do
  read -r kind cuda_name host_name _ <<<"$line"
  case "$kind" in tool|cli|test|bench) binary_targets+=("$([ $plan_col = 2 ] && echo "$cuda_name" || echo "$host_name")") ;; esac
done

# ---- configure and build
if [ "$mode" = cuda ]; then
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  command -v nvcc >/dev/null || { echo "cuda_build: nvcc not found (put the CUDA Toolkit's bin/ on PATH)" >&2; exit 1; }
  tree=$dir-build
  generator=()
  if [ ! -f "$tree/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
  # Size: sections per function and --gc-sections drop unused code, strip drops symbols below.
  # Portability: no -march=native, the CUDA runtime linked in, data paths relative to the root.
  cmake -S . -B "$tree" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMUNINN_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" -DMUNINN_CUDA_STATIC_RUNTIME=ON -DMUNINN_NATIVE=OFF \
    -DMUNINN_BUILD_EXAMPLES=OFF -DMUNINN_BUILD_DOCS=OFF -DMUNINN_BUILD_SERVER=OFF \
    -DMUNINN_TEST_DATA_IN_BINARIES=tests/data \
    -DCMAKE_CXX_FLAGS="-ffunction-sections -fdata-sections" \
    -DCMAKE_CUDA_FLAGS="-Xcompiler=-ffunction-sections,-fdata-sections" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,--gc-sections" \
    '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' >/dev/null
else
  tree=build/host
  cmake --preset host >/dev/null
fi
started=$(date +%s)
cmake --build "$tree" -j "$jobs" --target "${binary_targets[@]}"
echo "cuda_build: compiled ${#binary_targets[@]} targets in $(( $(date +%s) - started )) s (-j $jobs)"

# ---- every executable nvcc compiles must be in the plan (a new CUDA test must not be left out)
list=$tree/executables.txt
if [ "$mode" = cuda ]; then
  missing=$(awk '$2 == "cuda" { print $1 }' "$list" | while read -r t; do
    printf '%s\n' "${plan[@]}" | awk -v t="$t" '$2 == t { found = 1 } END { exit !found }' || echo "$t"; done)
  if [ -n "$missing" ]; then
    echo "cuda_build: tools/cuda_run.plan does not list these CUDA executables: $missing" >&2
    exit 1
  fi
fi

# ---- pack
rm -rf "$dir"
mkdir -p "$dir"/bin "$dir"/tests "$dir"/benchmarks "$dir"/lib
subdir_of() { case "$1" in test) echo tests ;; bench) echo benchmarks ;; *) echo bin ;; esac; }
manifest=$dir/manifest.txt
{
  echo "# written by tools/cuda_build.sh; read by tools/cuda_run.sh"
  echo "mode $mode"
  if commit=$(git rev-parse HEAD 2>/dev/null); then
    git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
  else
    commit="unknown (not a git checkout)"
  fi
  echo "commit $commit"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(ldd --version | head -1)"
  [ "$mode" = cuda ] && echo "nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\), V\([0-9.]*\).*/\2/p')" && echo "cuda_architectures $archs"
} >"$manifest"
for line in "${plan[@]}"; do
  read -r kind cuda_name host_name timeout <<<"$line"
  name=$([ $plan_col = 2 ] && echo "$cuda_name" || echo "$host_name")
  if [ "$kind" = golden ]; then
    [ -f "tests/cli/$name.cmake" ] || { echo "cuda_build: the plan's golden script tests/cli/$name.cmake is missing" >&2; exit 1; }
    echo "entry golden $name tests/cli/$name.cmake $timeout" >>"$manifest"
    continue
  fi
  file=$(awk -v t="$name" '$1 == t { print $3 }' "$list")
  [ -n "$file" ] && [ -x "$file" ] || { echo "cuda_build: no binary for target '$name' in $list" >&2; exit 1; }
  rel=$(subdir_of "$kind")/$(basename "$file")
  cp "$file" "$dir/$rel"
  strip "$dir/$rel"
  echo "entry $kind $name $rel $timeout" >>"$manifest"
done

# ---- the shared libraries a GPU machine's image may lack travel in lib/. Not copied: glibc's
# (the binaries need glibc >= the build machine's), libstdc++/libgcc_s (the system's, at least as
# new as the build machine's GCC), the CUDA driver and cuBLAS (the GPU machine's toolkit).
system_lib='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libcudart)\.so'
if [ "$mode" = cuda ]; then
  for f in "$dir"/bin/* "$dir"/tests/* "$dir"/benchmarks/*; do
    ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
  done | sort -u | while read -r soname path; do
    [[ "$soname" =~ $system_lib ]] && continue
    cp -L "$path" "$dir/lib/$soname"
    strip --strip-unneeded "$dir/lib/$soname"
  done
  echo "bundled $(cd "$dir/lib" && ls | tr '\n' ' ')" >>"$manifest"
fi

size_kib=$(du -sk "$dir" | cut -f1)
echo "size_kib $size_kib" >>"$manifest"
echo "cuda_build: $dir holds $(grep -c '^entry' "$manifest") entries, $(( (size_kib + 1023) / 1024 )) MiB"
du -sh "$dir"/* | sed 's/^/  /'
if [ "$size_kib" -gt $(( max_mib * 1024 )) ]; then
  echo "cuda_build: $dir is $(( size_kib / 1024 )) MiB, over the $max_mib MiB a GPU run can carry" >&2
  exit 1
fi
