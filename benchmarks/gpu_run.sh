#!/usr/bin/env bash
# Every GPU check and GPU training job of one device lease, in one script (see benchmarks/RESULTS.md).
#   1. the CTC test-suite with the Triton kernels compiled for CUDA (no interpreter)
#   2. benchmarks/ctc_bench.py --quick: speed, memory, determinism, float64 agreement
#   3. two IAM training runs side by side on the GPU (default-size and larger CRNN), time-budgeted
# Outputs go to $OUT (logs, JSON, the best checkpoints). Each part has its own timeout so that one
# failure cannot eat the lease. Usage on the device: OUT=/some/dir bash benchmarks/gpu_run.sh MINUTES
set -u
OUT=${OUT:-/tmp/gpu_out}
TRAIN_MINUTES=${1:-4.5}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

DATA=.devdata/iam48
COMMON="--data $DATA/train $DATA/train_extra --val-data $DATA/val --device cuda --ctc-impl triton --batch-size 32 --lr 1e-3 --warmup-steps 300 --max-epochs 200 --max-minutes $TRAIN_MINUTES --num-workers 7 --checkpoint-every 0 --progress false --seed 0"
# 3 starts first (background), so the GPU trains while 1 and 2 compile and time kernels.
if [ -d "$DATA/train" ]; then
  timeout $(( ${TRAIN_MINUTES%.*} * 60 + 150 )) python3 training/run_experiment.py $COMMON --run-dir /tmp/runs/base \
      > "$OUT/train_base.log" 2>&1 &
  BASE=$!
  timeout $(( ${TRAIN_MINUTES%.*} * 60 + 150 )) python3 training/run_experiment.py $COMMON --run-dir /tmp/runs/large --ctc-impl torch \
      --cnn-channels 24 48 96 --feature-dim 320 --lstm-layers 3 --lstm-hidden 192 \
      > "$OUT/train_large.log" 2>&1 &
  LARGE=$!
fi

timeout 150 python3 -m pytest tests/ctc -q -x -p no:cacheprovider > "$OUT/ctc_tests.log" 2>&1
echo "ctc tests exit $?" >> "$OUT/ctc_tests.log"; tail -3 "$OUT/ctc_tests.log"
timeout 180 python3 benchmarks/ctc_bench.py --quick --no-sweep --json "$OUT/ctc_bench.json" > "$OUT/ctc_bench.log" 2>&1
echo "ctc bench exit $?" >> "$OUT/ctc_bench.log"; tail -40 "$OUT/ctc_bench.log"

if [ -n "${BASE:-}" ]; then
  wait $BASE; echo "base exit $?"; wait $LARGE; echo "large exit $?"
  mkdir -p /tmp/results
  for r in base large; do
    tail -4 "$OUT/train_$r.log"
    for f in summary.json metrics.jsonl config.json; do [ -f /tmp/runs/$r/$f ] && cp /tmp/runs/$r/$f /tmp/results/${r}_$f; done
    # at most 16 MB a file comes back: ship the weights in float16 (restored to float32 on arrival)
    [ -f /tmp/runs/$r/best.pt ] && python3 -c "
import torch, sys
p = torch.load(sys.argv[1], weights_only=True)
p['model_state'] = {k: (v.half() if v.is_floating_point() else v) for k, v in p['model_state'].items()}
torch.save(p, sys.argv[2])" /tmp/runs/$r/best.pt "$OUT/best_${r}_fp16.pt"
  done
  mv "$OUT"/train_*.log /tmp/results/
fi
mv "$OUT"/env.txt "$OUT"/ctc_tests.log "$OUT"/ctc_bench.log "$OUT"/ctc_bench.json /tmp/results/ 2>/dev/null
tar czf "$OUT/results.tar.gz" -C /tmp results
ls -la "$OUT"
