#!/usr/bin/env bash
# Checks tools/cuda_run.sh's own logic on a packed folder of stand-in binaries (shell scripts that
# write the reports GoogleTest and Google Benchmark write), with a stand-in nvidia-smi: what a
# GPU run reports for a pass, a failure, a skip, a hang, a crash, a failed or skipped golden and a
# benchmark error; that it goes on after each; the "N passed, M failed" count and exit status; at
# most 8 files in $OUT; --no-gpu; a library that does not resolve; a spent time budget.
# Usage: cuda_run_selftest.sh <repository root>
set -uo pipefail
root=$(cd "${1:?repository root}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # description, then a command that must succeed
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fails=$((fails + 1)); fi
}
has_line() { grep -Eq "$2" "$1" || { echo "  no line matching '$2' in $1:"; sed 's/^/    /' "$1"; return 1; }; }

# ---- stand-ins
mkdir -p "$tmp/fakebin" "$tmp/run/bin" "$tmp/run/tests" "$tmp/run/benchmarks" "$tmp/run/lib" "$tmp/golden"
cat >"$tmp/fakebin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  *--query-gpu*noheader*) echo "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0" ;;
  *--query-gpu*) echo "name, memory.total [MiB], driver_version, compute_cap"; echo "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0" ;;
  *) echo "stand-in nvidia-smi" ;;
esac
EOF
chmod +x "$tmp/fakebin/nvidia-smi"
# A GoogleTest binary: $1 = what its one or two tests do (pass, fail, skip, hang, crash).
gtest_fake() {
  cat >"$tmp/run/tests/$1" <<EOF
#!/bin/bash
out=""
for a in "\$@"; do case "\$a" in --gtest_output=json:*) out=\${a#--gtest_output=json:} ;; esac; done
echo "[ RUN      ] Suite.First"
case "$2" in
  hang) sleep 60 ;;
  crash) kill -SEGV \$\$ ;;
esac
case "$2" in
  pass) second='{"name": "Second", "status": "RUN", "result": "COMPLETED"}'; rc=0 ;;
  fail) second='{"name": "Second", "status": "RUN", "result": "COMPLETED", "failures": [{"failure": "x", "type": ""}]}'; rc=1 ;;
  skip) second='{"name": "Second", "status": "RUN", "result": "SKIPPED", "skipped": [{"message": "t.cu:1\\nno CUDA device (0 devices)"}]}'; rc=0 ;;
esac
cat >"\$out" <<JSON
{"tests": 2, "testsuites": [{"name": "Suite", "testsuite": [
  {"name": "First", "status": "RUN", "result": "COMPLETED"}, \$second,
  {"name": "DISABLED_Third", "status": "NOTRUN", "result": "SUPPRESSED"}]}]}
JSON
exit \$rc
EOF
  chmod +x "$tmp/run/tests/$1"
}
gtest_fake test_pass pass
gtest_fake test_fail fail
gtest_fake test_skip skip
gtest_fake test_hang hang
gtest_fake test_crash crash
# A Google Benchmark binary: $2 = ok, error or nodevice.
bench_fake() {
  cat >"$tmp/run/benchmarks/$1" <<EOF
#!/bin/bash
out=""
for a in "\$@"; do
  case "\$a" in
    --benchmark_list_tests=true) echo "BM_a/1"; echo "BM_b/2"; exit 0 ;;
    --benchmark_out=*) out=\${a#--benchmark_out=} ;;
    --benchmark_min_time=*) echo "\$a" >"$tmp/$1.min_time" ;;
  esac
done
case "$2" in
  hang) echo "BM_a/1/manual_time  12 us"; sleep 60 ;;
esac
case "$2" in
  ok) b='{"name": "decode/m/r:32/manual_time", "run_type": "iteration", "real_time": 30.5, "time_unit": "ms", "tokens/s": 32.8, "%ceiling": 95.1}' ;;
  error) b='{"name": "BM_b/2/manual_time", "run_type": "iteration", "error_occurred": true, "error_message": "CUDA error: an illegal memory access"}' ;;
  nodevice) b='{"name": "BM_b/2/manual_time", "run_type": "iteration", "error_occurred": true, "error_message": "no CUDA device: 0 devices"}' ;;
esac
echo "{\"context\": {\"cuda_device\": \"stand-in\"}, \"benchmarks\": [{\"name\": \"BM_a/1/manual_time\", \"run_type\": \"iteration\", \"real_time\": 12.0, \"time_unit\": \"us\", \"GB/s\": 2900.0}, \$b]}" >"\$out"
EOF
  chmod +x "$tmp/run/benchmarks/$1"
}
bench_fake bench_ok ok
bench_fake bench_err error
bench_fake bench_nodev nodevice
bench_fake bench_hang hang
printf '#!/bin/sh\nexit 0\n' >"$tmp/run/bin/muninn"
cp "$tmp/run/bin/muninn" "$tmp/run/bin/npy_compare"
chmod +x "$tmp/run/bin/"*
echo 'message(STATUS "checked ${DEVICE}")' >"$tmp/golden/pass.cmake"
echo 'message(STATUS "skipped: no CUDA device (stand-in)")' >"$tmp/golden/skip.cmake"
echo 'message(FATAL_ERROR "logits differ from the reference: max |diff| 0.5")' >"$tmp/golden/fail.cmake"
cat >"$tmp/run/manifest.txt" <<EOF
mode cuda
commit selftest
cuda_architectures 90-real
entry tool npy_compare bin/npy_compare -
entry cli muninn_cli bin/muninn -
entry test test_pass tests/test_pass 20
entry test test_fail tests/test_fail 20
entry test test_skip tests/test_skip 20
entry test test_hang tests/test_hang 2
entry test test_crash tests/test_crash 20
entry golden golden_pass $tmp/golden/pass.cmake 20
entry golden golden_skip $tmp/golden/skip.cmake 20
entry golden golden_fail $tmp/golden/fail.cmake 20
entry bench bench_ok benchmarks/bench_ok 3
entry bench bench_err benchmarks/bench_err 1
entry bench bench_nodev benchmarks/bench_nodev 1
entry bench bench_hang benchmarks/bench_hang 1
EOF

# ---- a GPU run: every kind of outcome, and the run goes on after each failure
OUT=$tmp/out1 PATH="$tmp/fakebin:$PATH" bash "$root/tools/cuda_run.sh" --budget 120 --only '^(test|golden|bench_(ok|err|nodev))' "$tmp/run" >"$tmp/log1" 2>&1
rc=$?
s=$tmp/out1/summary.txt
check "a failing run exits non-zero" test $rc -ne 0
check "facts name the card" has_line "$s" '^facts +PASS .*NVIDIA H100 80GB HBM3'
check "libraries resolve" has_line "$s" '^libraries +PASS'
check "a passing binary passes" has_line "$s" '^test_pass +PASS .*2 passed, 0 failed, 0 skipped of 2'
check "a failing test fails its binary and is named" has_line "$s" '^test_fail +FAIL .*1 failed.*Suite.Second'
check "a skip on a GPU machine is a failure" has_line "$s" '^test_skip +FAIL .*a skip fails.*no CUDA device \(0 devices\)'
check "a hang is cut at its timeout and placed" has_line "$s" '^test_hang +FAIL .*timed out after 2s in Suite.First'
check "a crash is reported with where it happened" has_line "$s" '^test_crash +FAIL .*no report \(crashed in Suite.First\)'
check "a golden passes" has_line "$s" '^golden_pass +PASS'
check "a skipped golden fails on a GPU machine" has_line "$s" '^golden_skip +FAIL .*skipped: no CUDA device'
check "a failing golden says why" has_line "$s" '^golden_fail +FAIL .*logits differ from the reference'
check "benchmarks run after the failures" has_line "$s" '^bench_ok +PASS .*2 benchmarks'
check "a benchmark error fails its binary" has_line "$s" '^bench_err +FAIL .*1 of 2 benchmarks failed.*illegal memory access'
check "no CUDA device fails a benchmark on a GPU machine" has_line "$s" '^bench_nodev +FAIL'
check "the count line" has_line "$s" '^5 passed, 8 failed'
check "min_time is passed and bounded" grep -Eq '^--benchmark_min_time=0\.[0-9]+$' "$tmp/bench_ok.min_time"
n=$(find "$tmp/out1" -type f | wc -l)
check "at most 8 files come back ($n)" test "$n" -le 8
check "the results archive holds the reports" sh -c "tar -tzf '$tmp/out1/results.tar.gz' | grep -q 'test_pass.json' && tar -tzf '$tmp/out1/results.tar.gz' | grep -q facts.txt"
check "the perf table shows the decode headline" has_line "$tmp/out1/perf_tables.md" 'decode/m/r:32.*32.8 tokens/s, 95.1 % of the weight-bandwidth bound \(meets'

# ---- --no-gpu: skips and "no CUDA device" are what a machine without a GPU must report
OUT=$tmp/out2 bash "$root/tools/cuda_run.sh" --no-gpu --only 'skip|nodev|pass' "$tmp/run" >"$tmp/log2" 2>&1
rc=$?
s=$tmp/out2/summary.txt
check "--no-gpu: the selected steps pass" test $rc -eq 0
check "--no-gpu: a skip passes" has_line "$s" '^test_skip +PASS .*1 skipped'
check "--no-gpu: a skipped golden passes" has_line "$s" '^golden_skip +PASS'
check "--no-gpu: no CUDA device passes" has_line "$s" '^bench_nodev +PASS .*no CUDA device'
check "--only leaves the others out" sh -c "! grep -q '^test_fail' '$s'"

# ---- a library that does not resolve: one clear line, nothing runs
printf '#!/bin/sh\necho "\tlibmuninn_absent.so.1 => not found"\n' >"$tmp/fakebin/ldd"
chmod +x "$tmp/fakebin/ldd"
OUT=$tmp/out3 PATH="$tmp/fakebin:$PATH" bash "$root/tools/cuda_run.sh" "$tmp/run" >"$tmp/log3" 2>&1
rc=$?
rm "$tmp/fakebin/ldd"
s=$tmp/out3/summary.txt
check "unresolved library: non-zero exit" test $rc -ne 0
check "unresolved library: named" has_line "$s" '^libraries +FAIL .*libmuninn_absent.so.1 => not found'
check "unresolved library: nothing else runs" sh -c "! grep -q '^test_pass' '$s'"

# ---- a benchmark binary that overruns its share of the budget is cut, with what it finished
OUT=$tmp/out5 PATH="$tmp/fakebin:$PATH" bash "$root/tools/cuda_run.sh" --budget 30 --only 'bench_hang' "$tmp/run" >"$tmp/log5" 2>&1
check "benchmark over its share: cut and counted" has_line "$tmp/out5/summary.txt" '^bench_hang +FAIL .*timed out after [0-9]+s .*1 of 2 benchmarks done'

# ---- a budget too short for the tests: they are reported as not run, not silently dropped (a budget
# equal to the 15 s kept for packing the results leaves nothing for any step, however fast the machine)
OUT=$tmp/out4 PATH="$tmp/fakebin:$PATH" bash "$root/tools/cuda_run.sh" --budget 15 --only 'test_pass' "$tmp/run" >"$tmp/log4" 2>&1
check "spent budget: reported" has_line "$tmp/out4/summary.txt" '^test_pass +FAIL .*not run: the time budget is spent'

[ $fails = 0 ] && echo "cuda_run_selftest: all checks passed" || echo "cuda_run_selftest: $fails checks failed"
[ $fails = 0 ]
