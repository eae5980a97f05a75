#!/usr/bin/env bash
# Tests tools/cpu-pair-probe: on two CPUs --quiet prints three ratios (even,
# busy and transfer: ratios of speeds, so above zero and, with the noise of
# two pairs, well under 10) and the long form names all three; bad
# arguments fail with a message naming them.
# Usage: cpu_pair_probe_test.sh <source dir>
set -uo pipefail
probe="$1/tools/cpu-pair-probe"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$cpus" -ge 2 ]; then
  if ! ratio=$("$probe" --pairs 2 --seconds 0.05 --quiet 2>&1); then
    fail "the probe failed: $ratio"
  elif ! python3 -c "import sys; r = [float(x) for x in '$ratio'.split()]
sys.exit(0 if len(r) == 3 and all(0 < x < 10 for x in r) else 1)"; then
    fail "the probe printed '$ratio', not three ratios"
  fi
  if ! out=$("$probe" --pairs 1 --seconds 0.05 2>&1) || [[ "$out" != *"even:"* ]] ||
     [[ "$out" != *"busy:"* ]] || [[ "$out" != *"transfer:"* ]]; then
    fail "the long form does not give all three medians: $out"
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
if out=$("$probe" --pairs 0 2>&1) || [[ "$out" != *"--pairs and --mib must be >= 1"* ]]; then
  fail "--pairs 0 must fail naming --pairs: $out"
fi
if out=$("$probe" --mib 0 2>&1) || [[ "$out" != *"--pairs and --mib must be >= 1"* ]]; then
  fail "--mib 0 must fail naming --mib: $out"
fi

[ "$failures" -eq 0 ] && echo "cpu_pair_probe_test: all passed"
exit $((failures > 0))
