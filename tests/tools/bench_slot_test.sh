#!/usr/bin/env bash
# Tests cairn-bench's call-slot rows against real daemons: Cairn-shm-slot and
# Cairn-shm-lent-slot must each print a push and a pull row. Each driver
# fails the run when none of its calls went through a call slot (or, for
# the lent method, none in place), so a pass means the rows measured the
# slot path. Usage: bench_slot_test.sh <bin dir>
set -uo pipefail
bin="$1"
out=$("$bin/cairn-bench" --bin-dir "$bin" --iterations 5 --warmup-seconds 0 --prime-rounds 0 \
  --cases push-1mib,pull-1mib --methods Cairn-shm-slot,Cairn-shm-lent-slot 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: cairn-bench exited $rc:" >&2
  echo "$out" >&2
  exit 1
fi
failures=0
for row in "Cairn-shm-slot push 1 MiB" "Cairn-shm-slot pull 1 MiB" \
           "Cairn-shm-lent-slot push 1 MiB" "Cairn-shm-lent-slot pull 1 MiB"; do
  if ! grep -q "^| $row | 5 |" <<<"$out"; then
    echo "FAIL: no row \"$row\" of 5 iterations in:" >&2
    echo "$out" >&2
    failures=$((failures + 1))
  fi
done
if ! grep -q "\*-slot rows: server and client poll" <<<"$out"; then
  echo "FAIL: the report does not say how the -slot rows were measured" >&2
  failures=$((failures + 1))
fi
exit $((failures > 0))
