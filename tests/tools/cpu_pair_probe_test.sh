#!/usr/bin/env bash
# Tests tools/cpu-pair-probe: on two CPUs it prints one ratio (a speed beside
# a busy CPU over one beside an idle CPU, so above zero and, with the noise
# of one pair, well under 10); bad arguments fail with a message naming them.
# Usage: cpu_pair_probe_test.sh <source dir>
set -uo pipefail
probe="$1/tools/cpu-pair-probe"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$cpus" -ge 2 ]; then
  if ! ratio=$("$probe" --pairs 2 --seconds 0.05 --quiet 2>&1); then
    fail "the probe failed: $ratio"
  elif ! python3 -c "import sys; r = float('$ratio'); sys.exit(0 if 0 < r < 10 else 1)"; then
    fail "the probe printed '$ratio', not a ratio"
  fi
  if ! out=$("$probe" --pairs 1 --seconds 0.05 2>&1) || [[ "$out" != *"median"* ]]; then
    fail "the long form does not give the median: $out"
  fi
else
  if out=$("$probe" --pairs 1 --seconds 0.05 2>&1) || [[ "$out" != *"needs two CPUs"* ]]; then
    fail "on one CPU the probe must refuse, naming why: $out"
  fi
fi

if out=$("$probe" --cpus 0,0 2>&1) || [[ "$out" != *"--cpus needs two different CPUs"* ]]; then
  fail "--cpus 0,0 must fail naming --cpus: $out"
fi
if out=$("$probe" --cpus zero,one 2>&1) || [[ "$out" != *"got 'zero,one'"* ]]; then
  fail "--cpus zero,one must fail naming the value: $out"
fi
if out=$("$probe" --pairs 0 2>&1) || [[ "$out" != *"--pairs must be >= 1"* ]]; then
  fail "--pairs 0 must fail naming --pairs: $out"
fi

[ "$failures" -eq 0 ] && echo "cpu_pair_probe_test: all passed"
exit $((failures > 0))
