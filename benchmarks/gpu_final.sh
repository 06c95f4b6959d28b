#!/usr/bin/env bash
# Second device lease: fine-tune the bundled model and re-check the CTC kernel, in one script.
#   - fine-tunes the default CRNN from the first lease's best checkpoint (.devdata/init_base.pt) on
#     IAM train + train_extra (+ synthetic lines), with padded frames masked (new in this version)
#   - meanwhile: tests/ctc compiled on CUDA and benchmarks/ctc_bench.py --quick
# Usage on the device: OUT=/some/dir bash benchmarks/gpu_final.sh MINUTES
set -u
OUT=${OUT:-/tmp/gpu_out}
TRAIN_MINUTES=${1:-4.5}
mkdir -p "$OUT" /tmp/results
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" | tee /tmp/results/env.txt
DATA=.devdata/iam48
timeout $(( ${TRAIN_MINUTES%.*} * 60 + 150 )) python3 training/run_experiment.py \
    --data $DATA/train $DATA/train_extra synthetic --synthetic-train-lines 3000 --val-data $DATA/val \
    --device cuda --ctc-impl triton --batch-size 32 --lr 5e-4 --warmup-steps 100 --max-epochs 200 \
    --max-minutes $TRAIN_MINUTES --num-workers 13 --checkpoint-every 0 --progress false --seed 1 \
    --init-from .devdata/init_base.pt --run-dir /tmp/runs/bundle > /tmp/results/train_bundle.log 2>&1 &
TRAIN=$!
timeout 120 python3 -m pytest tests/ctc -q -x -p no:cacheprovider > /tmp/results/ctc_tests.log 2>&1
echo "ctc tests exit $?" >> /tmp/results/ctc_tests.log; tail -3 /tmp/results/ctc_tests.log
timeout 150 python3 benchmarks/ctc_bench.py --quick --json /tmp/results/ctc_bench.json > /tmp/results/ctc_bench.log 2>&1
echo "ctc bench exit $?" >> /tmp/results/ctc_bench.log; cp /tmp/results/ctc_bench.log "$OUT/"
wait $TRAIN; echo "train exit $?"; tail -5 /tmp/results/train_bundle.log
for f in summary.json metrics.jsonl config.json; do cp /tmp/runs/bundle/$f /tmp/results/bundle_$f 2>/dev/null; done
cp /tmp/runs/bundle/best.pt "$OUT/best_bundle.pt" 2>/dev/null
tar czf "$OUT/results.tar.gz" -C /tmp results
cat "$OUT/ctc_bench.log" | tail -45
ls -la "$OUT"
