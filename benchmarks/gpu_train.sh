#!/usr/bin/env bash
# GPU lease, part 2: fine-tune the bundled model on IAM train + train_extra with the photo-like
# augmentation (incl. loose margins and neighbouring-line fragments), time-budgeted, then ship the
# best checkpoint back (as saved when it is under the device's 16 MB file limit, else as float16
# weights, restored to float32 on arrival).
# Data: IAM packed to 40 px in .devdata/iam40 (python -m training.sources.pack_folder SRC DST --height 40),
# carried to the device (ignored folder), with .whl/ holding the py3.12 wheels the device image lacks
# (rapidfuzz, hershey-fonts: see the device README). Usage on the device: OUT=/dir bash benchmarks/gpu_train.sh MINUTES
# Settings by environment variable (defaults = the 2026-11-30 run that made crnn-iam-2026.11.30c):
#   OPTIMIZER (rmsprop), LR (6e-4), SEED (2), AUGMENT_P (0.6), WARMUP (100), WORKERS (14),
#   EXTRA: more run_experiment.py flags, e.g. the font/EMA recipe of the CPU stages:
#   EXTRA="--fonts .devdata/fonts_mix --font-train-lines 6000 --weight-decay 0.05 --ema-decay 0.9995"
set -u
OUT=${OUT:-/tmp/gpu_out}
MINUTES=${1:-6}
OPTIMIZER=${OPTIMIZER:-rmsprop}
LR=${LR:-6e-4}
SEED=${SEED:-2}
AUGMENT_P=${AUGMENT_P:-0.6}
WARMUP=${WARMUP:-100}
WORKERS=${WORKERS:-14}
EXTRA=${EXTRA:-}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
DATA=.devdata/iam40
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
# shellcheck disable=SC2086  # EXTRA is a list of flags
timeout $(( ${MINUTES%.*} * 60 + 120 )) python3 training/run_experiment.py \
    --data $DATA/train $DATA/train_extra --val-data $DATA/val --height 40 \
    --device cuda --ctc-impl triton --batch-size 48 --optimizer "$OPTIMIZER" --lr "$LR" --warmup-steps "$WARMUP" \
    --max-epochs 200 --max-minutes "$MINUTES" --num-workers "$WORKERS" --augment-p "$AUGMENT_P" --sortagrad false \
    --val-every 3 --checkpoint-every 0 --progress false --seed "$SEED" --init-from text_recognizer/artifacts/default.pt \
    $EXTRA --run-dir /tmp/runs/ft > "$OUT/train.log" 2>&1
echo "train exit $?"; tail -8 "$OUT/train.log"
for f in summary.json metrics.jsonl config.json; do cp /tmp/runs/ft/$f "$OUT/ft_$f" 2>/dev/null; done
if [ -f /tmp/runs/ft/best.pt ]; then
  if [ "$(stat -c %s /tmp/runs/ft/best.pt)" -lt 16000000 ]; then
    cp /tmp/runs/ft/best.pt "$OUT/best_ft.pt"
  else
    python3 -c "
import torch, sys
p = torch.load(sys.argv[1], weights_only=True)
p['model_state'] = {k: (v.half() if v.is_floating_point() else v) for k, v in p['model_state'].items()}
torch.save(p, sys.argv[2])" /tmp/runs/ft/best.pt "$OUT/best_ft_fp16.pt"
  fi
fi
ls -la "$OUT"
