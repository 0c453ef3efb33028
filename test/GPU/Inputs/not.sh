#!/bin/sh
# A stand-in for LLVM's `not` on the GPU machine (no LLVM there; scripts/gpu-bundle.sh
# ships this as tools/not): succeeds when the command ran and failed, fails when it
# succeeded, could not be run (126, 127) or was killed by a signal (LLVM's `not`
# without --crash also counts a crash as a failure).
"$@"
rc=$?
[ "$rc" -ne 0 ] || exit 1
[ "$rc" -ne 126 ] && [ "$rc" -ne 127 ] && [ "$rc" -le 128 ] || exit "$rc"
exit 0
