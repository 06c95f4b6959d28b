#!/usr/bin/env bash
# The GPU checks of the fused CTC loss, in one script for one device lease (about 3 minutes):
#   1. the CTC test-suite with the Triton kernels compiled for CUDA (no interpreter; beam-search tests left to CI)
#   2. benchmarks/ctc_bench.py --quick: speed and memory vs PyTorch/cuDNN, per-kernel GPU time,
#      determinism, float64 agreement, and the sweep of KernelConfig (warps, shift, directions)
# Each part has its own timeout, so one failure cannot eat the lease. Logs and JSON go to $OUT.
# Usage on the device: OUT=/some/dir bash benchmarks/gpu_ctc.sh
# TEST_TIMEOUT / BENCH_TIMEOUT (seconds) shorten the parts when the lease also has to train.
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
# The device image lacks rapidfuzz (imported by the calibration tests): the carried .whl/ wheels (device README)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null \
    && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
{ date -u; git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# The beam-search tests need flashlight-text, which the device image lacks; they are CPU code, run by CI.
timeout ${TEST_TIMEOUT:-180} python3 -m pytest tests/ctc -q -x -p no:cacheprovider \
    --ignore=tests/ctc/test_beam.py -k "not beam and not kenlm" > "$OUT/ctc_tests.log" 2>&1
echo "ctc tests exit $?" >> "$OUT/ctc_tests.log"; tail -3 "$OUT/ctc_tests.log"
timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/ctc_bench.py --quick --json "$OUT/ctc_bench.json" > "$OUT/ctc_bench.log" 2>&1
echo "ctc bench exit $?" >> "$OUT/ctc_bench.log"; tail -60 "$OUT/ctc_bench.log"
