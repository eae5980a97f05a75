#!/usr/bin/env bash
# Tests tools/check-arrows: this checkout passes; planted includes against
# each arrow fail, each named with its file and line; a tree that only uses
# what it may passes. Usage: check_arrows_test.sh <source dir>
set -uo pipefail
src="$1"
check="$src/tools/check-arrows"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

if ! out=$("$check" --root "$src" 2>&1); then
  fail "the checkout breaks the arrows:"; echo "$out" >&2
fi

tree=$(mktemp -d "${TMPDIR:-/tmp}/check-arrows.XXXXXX")
trap 'rm -rf "$tree"' EXIT
plant() {  # plant <file> <include>
  mkdir -p "$(dirname "$tree/$1")"
  printf '// planted\n#include "%s"\n' "$2" >> "$tree/$1"
}

# A tree that uses only what each folder may: passes.
plant server/coordinator/ok.cc server/checkpoint/checkpoint_reader.h
plant server/shard/ok.cc server/optimizer/optimizer.h
plant worker/trainer/ok.cc worker/client/client.h
plant common/ok.cc cairn/v1/types.pb.h
plant kernels/ok.cc kernels/backend.h
plant tools/bench/ok.cc server/shard/table.h
if ! out=$("$check" --root "$tree" 2>&1); then
  fail "a tree within the arrows fails:"; echo "$out" >&2
fi

# One violation per arrow.
plant server/coordinator/bad.cc server/shard/shard.h       # the coordinator reaches servers only over the wire
plant common/bad.cc server/coordinator/lease_table.h       # common knows no daemon
plant kernels/bad.cc common/log.h                          # kernels are pure compute
plant kernels/bad_external.cc rocksdb/db.h                 # ... and keep no store
plant server/shard/bad.cc worker/client/client.h           # servers never call the worker library
plant server/shard/model.cc worker/trainer/mlp.h           # ... or know a model
plant worker/client/bad.cc worker/trainer/trainer.h        # the client knows no training loop
plant worker/client/server.cc server/shard/table.h         # ... and reaches servers only over the wire
out=$("$check" --root "$tree" 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "planted violations: exit $rc, want 1"
expect() {  # expect <file:line> <include>
  grep -q "^$1: includes $2" <<<"$out" || fail "not reported: $1 includes $2"
}
expect server/coordinator/bad.cc:2 server/shard/shard.h
expect common/bad.cc:2 server/coordinator/lease_table.h
expect kernels/bad.cc:2 common/log.h
expect kernels/bad_external.cc:2 rocksdb/db.h
expect server/shard/bad.cc:2 worker/client/client.h
expect server/shard/model.cc:2 worker/trainer/mlp.h
expect worker/client/bad.cc:2 worker/trainer/trainer.h
expect worker/client/server.cc:2 server/shard/table.h
n=$(grep -c ': includes ' <<<"$out")
[ "$n" -eq 8 ] || { fail "$n violations reported, want 8:"; echo "$out" >&2; }
grep -q 'server/coordinator may depend only on server/checkpoint, common, proto' <<<"$out" ||
  fail "the message does not say what server/coordinator may use"

"$check" --root "$tree/missing" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "a missing --root: exit $rc, want 2"

[ "$failures" -eq 0 ] && echo "check_arrows_test: all passed"
exit $((failures > 0))
