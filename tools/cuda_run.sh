#!/usr/bin/env bash
# Runs the folder tools/cuda_build.sh packed, on a GPU machine: the machine's facts, a check that
# every shared library resolves, each CUDA test binary (GoogleTest JSON; a skipped test fails it),
# the CLI goldens with --device cuda, then the benchmarks with a --benchmark_min_time that keeps
# the whole run inside its time budget. One summary line per step, then "N passed, M failed";
# a failing step does not stop the ones after it.
#
# Usage: tools/cuda_run.sh [options] [DIR]          (from anywhere; it runs in the repository root)
#   DIR                  the packed folder (default build/cuda-run)
#   --budget S           seconds the whole run may take (default 480)
#   --only REGEX         run only the plan entries whose name matches (facts and libraries always)
#   --gtest-filter F     passed to every test binary as --gtest_filter
#   --bench-filter F     passed to every benchmark as --benchmark_filter
#   --no-gpu             this machine has no GPU: CUDA tests must report skipped, benchmarks
#                        "no CUDA device", the goldens "skipped" (how CI checks the folder runs)
#
# Results: $OUT (default build/cuda-results) gets at most 8 files: summary.txt, results.tar.gz
# (facts, every log and JSON report), each benchmark's JSON and perf_tables.md (the
# docs/performance.md tables, tools/cuda_perf_table.py). Exit status 0 when every step passed.
# A folder packed with --host (build/host-run) runs the same sequence with the host twins: the
# rehearsal on a machine without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

budget=480
only=""
gtest_filter=""
bench_filter=""
no_gpu=0
dir=build/cuda-run
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget="$2"; shift ;;
    --only) only="$2"; shift ;;
    --gtest-filter) gtest_filter="$2"; shift ;;
    --bench-filter) bench_filter="$2"; shift ;;
    --no-gpu) no_gpu=1 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cuda_run: unknown option '$1'" >&2; exit 2 ;;
    *) dir="${1%/}" ;;
  esac
  shift
done
manifest=$dir/manifest.txt
if [ ! -f "$manifest" ]; then
  echo "cuda_run: $manifest not found: pack the folder first with tools/cuda_build.sh (and carry it)" >&2
  exit 2
fi
dir=$(cd "$dir" && pwd)
# python3 reads the JSON reports; resolved once (a version manager's shim costs seconds a call)
py=$(python3 -S -c 'import sys; print(sys.executable)' 2>/dev/null) ||
  { echo "cuda_run: python3 is needed to read the JSON reports" >&2; exit 2; }
mode=$(awk '$1 == "mode" { print $2 }' "$manifest")
device=cpu
[ "$mode" = cuda ] && device=cuda
# A GPU is expected (and a skip is a failure) when the folder is a CUDA one and --no-gpu is not given.
expect_gpu=0
[ "$mode" = cuda ] && [ $no_gpu = 0 ] && expect_gpu=1

out=${OUT:-$root/build/cuda-results}
mkdir -p "$out"
rm -f "$out"/summary.txt "$out"/results.tar.gz "$out"/perf_tables.md "$out"/bench_*.json
work=$(mktemp -d "${TMPDIR:-/tmp}/muninn-cuda-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
summary=$out/summary.txt
t0=$(date +%s)
deadline=$((t0 + budget))
pack_reserve=15
passed=0
failed=0

now() { date +%s; }
say() { printf '%s\n' "$*" | tee -a "$summary"; }
# record NAME PASS|FAIL SECONDS DETAIL: one summary line per step
record() {
  [ "$2" = PASS ] && passed=$((passed + 1)) || failed=$((failed + 1))
  say "$(printf '%-26s %s %5ss  %s' "$1" "$2" "$3" "$4")"
}
selected() { [ -z "$only" ] || [[ "$1" =~ $only ]]; }
# The last "[ RUN      ] Suite.Test" a GoogleTest log shows: where a hang or a crash happened.
last_test() { grep -o '^\[ RUN      \] .*' "$1" 2>/dev/null | tail -1 | sed 's/^\[ RUN      \] //'; }
last_error_line() { grep -v '^[[:space:]]*$\|^\[' "$1" 2>/dev/null | tail -1 | cut -c1-200; }

built_from=$(sed -n 's/^commit //p' "$manifest")
say "muninn cuda_run: $built_from, mode $mode$([ $no_gpu = 1 ] && echo ', --no-gpu'), budget ${budget}s, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The goldens and fixtures come from this tree, the binaries from the folder: say when they differ.
tree_at=$(git rev-parse HEAD 2>/dev/null) && [ "${built_from%% *}" != "$tree_at" ] &&
  say "cuda_run: note: the folder was built from ${built_from%% *}, this tree is at $tree_at"

# ---------------------------------------------------------------- facts
{
  echo "== manifest"; cat "$manifest"
  echo "== host"; uname -a; nproc; (lscpu | grep 'Model name') 2>/dev/null; (free -g | head -2) 2>/dev/null
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== nvidia-smi query"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm,clocks.max.memory,power.limit --format=csv 2>&1
  echo "== cmake"; cmake --version 2>&1 | head -1
} >"$work/facts.txt" 2>&1
if [ "$mode" = cuda ]; then
  gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
  built_for=$(awk '$1 == "cuda_architectures" { print $2 }' "$manifest")
  cc=$(echo "$gpu" | awk -F', ' '{ gsub(/\./, "", $4); print $4 }')
  if [ $expect_gpu = 0 ]; then
    record facts PASS 0 "no GPU expected; nvidia-smi: ${gpu:-none}"
  elif [ -z "$gpu" ]; then
    record facts FAIL 0 "nvidia-smi lists no GPU: $(nvidia-smi 2>&1 | head -1)"
  elif [ -n "$cc" ] && ! echo "$built_for" | tr ';' '\n' | grep -q "^$cc"; then
    record facts FAIL 0 "$gpu: compute capability $cc, but the folder holds code for $built_for only (MUNINN_CUDA_ARCHS)"
  else
    record facts PASS 0 "$gpu (name, memory, driver, compute capability)"
  fi
else
  record facts PASS 0 "host: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
fi

# ---------------------------------------------------------------- shared libraries
# Every binary must load: ldd must resolve each library (and each symbol version). A library the
# image keeps outside the loader's path (cuBLAS in the CUDA toolkit) is looked for in the usual
# places and added to LD_LIBRARY_PATH.
mapfile -t entries < <(awk '$1 == "entry" { print $2, $3, $4, $5 }' "$manifest")
binaries=()
for e in "${entries[@]}"; do
  read -r kind name rel _ <<<"$e"
  [ "$kind" != golden ] && binaries+=("$dir/$rel")
done
unresolved() {
  for f in "${binaries[@]}" "$dir"/lib/*.so*; do
    [ -f "$f" ] || continue
    ldd "$f" 2>&1 | grep 'not found' | sed "s|^[[:space:]]*|$(basename "$f"): |"
  done | sort -u
}
# The CUDA toolkit's library folders first, then a search (a Python wheel's copy, say).
find_lib() {
  local d
  for d in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/$1" ] && { echo "$d/$1"; return; }
  done
  find /usr/local /opt /usr/lib -maxdepth 10 -name "$1" 2>/dev/null | head -1
}
t=$(now)
missing=$(unresolved)
added=""
if [ -n "$missing" ]; then
  for soname in $(echo "$missing" | grep -o 'lib[^ ]*\.so[.0-9]*' | sort -u); do
    found=$(find_lib "$soname")
    if [ -n "$found" ]; then
      found=$(dirname "$found")
      added="$added:$found"
      export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  done
  missing=$(unresolved)
fi
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"$work/facts.txt"
if [ -n "$missing" ]; then
  echo "$missing" >"$work/ldd_unresolved.txt"
  record libraries FAIL $(($(now) - t)) "$(echo "$missing" | head -3 | tr '\n' ';') (all: ldd_unresolved.txt)"
  say "cuda_run: the binaries cannot load on this machine; nothing else runs"
else
  record libraries PASS $(($(now) - t)) "every library resolves${added:+ (LD_LIBRARY_PATH +${added#:})}"
fi

# ---------------------------------------------------------------- tests, goldens, benchmarks
# Seconds left for a step, keeping `keep` seconds for what follows it.
left() { echo $((deadline - $(now) - pack_reserve - $1)); }
n_bench=0
bench_weight_total=0
for e in "${entries[@]}"; do
  read -r kind name _ weight <<<"$e"
  if [ "$kind" = bench ] && selected "$name"; then n_bench=$((n_bench + 1)); bench_weight_total=$((bench_weight_total + weight)); fi
done
# Time kept for the benchmarks while tests run: a third of the budget when there are any.
bench_keep=$(( n_bench > 0 ? budget / 3 : 0 ))

run_test() {  # name rel timeout
  local name=$1 bin=$dir/$2 limit=$3 t rc line detail
  local cap; cap=$(left "$bench_keep")
  [ "$cap" -lt "$limit" ] && limit=$cap
  if [ "$limit" -le 0 ]; then record "$name" FAIL 0 "not run: the time budget is spent"; return; fi
  t=$(now)
  timeout -k 5 "$limit" "$bin" --gtest_output="json:$work/$name.json" ${gtest_filter:+--gtest_filter="$gtest_filter"} \
    >"$work/$name.log" 2>&1
  rc=$?
  t=$(($(now) - t))
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    record "$name" FAIL $t "timed out after ${limit}s in $(last_test "$work/$name.log")"; return
  fi
  if ! line=$("$py" -S tools/cuda_run_parse.py gtest "$work/$name.json" 2>&1); then
    record "$name" FAIL $t "exit $rc, no report (crashed in $(last_test "$work/$name.log")): $(last_error_line "$work/$name.log")"; return
  fi
  read -r total ok bad skip <<<"${line%%$'\t'*}"
  detail=${line#*$'\t'}
  local counts="$ok passed, $bad failed, $skip skipped of $total"
  if [ "$bad" -gt 0 ] || [ $rc != 0 ]; then
    record "$name" FAIL $t "$counts (exit $rc) ${detail}"
  elif [ "$total" = 0 ]; then
    record "$name" FAIL $t "no test ran"
  elif [ "$skip" -gt 0 ] && { [ $expect_gpu = 1 ] || [ "$mode" = host ]; }; then
    record "$name" FAIL $t "$counts: a skip fails on this machine; $detail"
  else
    record "$name" PASS $t "$counts"
  fi
}

run_golden() {  # name script timeout
  local name=$1 script=$2 limit=$3 t rc log=$work/$1.log
  case "$script" in /*) ;; *) script=$root/$script ;; esac
  local cap; cap=$(left "$bench_keep")
  [ "$cap" -lt "$limit" ] && limit=$cap
  if [ "$limit" -le 0 ]; then record "$name" FAIL 0 "not run: the time budget is spent"; return; fi
  t=$(now)
  timeout -k 5 "$limit" cmake -DEXE="$dir/bin/muninn" -DNPY_COMPARE="$dir/bin/npy_compare" \
    -DDATA="$root/tests/data/huginn" -DTEST_DATA="$root/tests/data" -DWORK="$work/$name" -DDEVICE="$device" \
    -P "$script" >"$log" 2>&1
  rc=$?
  t=$(($(now) - t))
  rm -rf "${work:?}/$name"
  if [ $rc != 0 ]; then
    record "$name" FAIL $t "exit $rc: $(grep -v '^[[:space:]]*$' "$log" | grep -v '^CMake Error at\|^Call Stack' | head -2 | tr '\n' ' ' | cut -c1-240)"
  elif grep -q 'skipped: no CUDA device' "$log"; then
    if [ $expect_gpu = 1 ]; then record "$name" FAIL $t "$(grep -o 'skipped: no CUDA device.*' "$log" | head -1)"
    else record "$name" PASS $t "skipped: no CUDA device (no GPU expected)"; fi
  else
    record "$name" PASS $t "--device $device matches the fixtures"
  fi
}

run_bench() {  # name rel weight
  local name=$1 bin=$dir/$2 weight=$3 t rc n line detail
  local share=$(( $(left 0) * weight / bench_weight_total ))
  bench_weight_total=$((bench_weight_total - weight))
  if [ "$share" -le 5 ]; then record "$name" FAIL 0 "not run: the time budget is spent"; return; fi
  "$bin" --benchmark_list_tests=true ${bench_filter:+--benchmark_filter="$bench_filter"} >"$work/$name.list" 2>/dev/null
  n=$(grep -c . "$work/$name.list")
  # Half the share is spent in measured loops: each benchmark also sets up its data, warms up
  # and, for fixed-iteration benchmarks, ignores min_time.
  local min_time
  min_time=$("$py" -S -c "print(f'{max(0.01, min(0.5, 0.5 * $share / max($n, 1))):.3f}')")
  t=$(now)
  timeout -k 5 "$share" "$bin" --benchmark_min_time="$min_time" --benchmark_out="$work/$name.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true \
    ${bench_filter:+--benchmark_filter="$bench_filter"} >"$work/$name.log" 2>&1
  rc=$?
  t=$(($(now) - t))
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    record "$name" FAIL $t "timed out after ${share}s (min_time ${min_time}s): $(grep -cFf "$work/$name.list" "$work/$name.log") of $n benchmarks done"
    return
  fi
  if ! line=$("$py" -S tools/cuda_run_parse.py bench "$work/$name.json" 2>&1); then
    record "$name" FAIL $t "exit $rc, no report: $(last_error_line "$work/$name.log")"; return
  fi
  read -r runs errors no_device <<<"${line%%$'\t'*}"
  detail=${line#*$'\t'}
  cp "$work/$name.json" "$out/$name.json"
  if [ $rc != 0 ] || [ "$runs" = 0 ]; then
    record "$name" FAIL $t "exit $rc, $runs benchmarks $detail"
  elif [ $expect_gpu = 0 ] && [ "$mode" = cuda ] && [ "$errors" = "$no_device" ]; then
    record "$name" PASS $t "$runs benchmarks report no CUDA device (no GPU expected)"
  elif [ "$errors" -gt 0 ]; then
    record "$name" FAIL $t "$errors of $runs benchmarks failed; $detail"
  else
    record "$name" PASS $t "$runs benchmarks, min_time ${min_time}s"
  fi
}

if [ -z "$missing" ]; then
  for e in "${entries[@]}"; do
    read -r kind name rel limit <<<"$e"
    selected "$name" || continue
    case "$kind" in
      test) run_test "$name" "$rel" "$limit" ;;
      golden) run_golden "$name" "$rel" "$limit" ;;
    esac
  done
  for e in "${entries[@]}"; do
    read -r kind name rel weight <<<"$e"
    [ "$kind" = bench ] && selected "$name" && run_bench "$name" "$rel" "$weight"
  done
fi

# ---------------------------------------------------------------- pack
if ls "$out"/bench_*.json >/dev/null 2>&1; then
  "$py" -S tools/cuda_perf_table.py "$work/facts.txt" "$out"/bench_*.json >"$out/perf_tables.md" 2>"$work/perf_tables.err" ||
    say "cuda_run: tools/cuda_perf_table.py failed: $(tail -1 "$work/perf_tables.err")"
fi
say "$passed passed, $failed failed ($(($(now) - t0)) s)"
cp "$summary" "$work/summary.txt"
tar -czf "$out/results.tar.gz" -C "$work" .
[ $failed = 0 ]
