#!/usr/bin/env bash
# GPU lease, part 2: fine-tune the bundled model on IAM train + train_extra with the photo-like
# augmentation (incl. loose margins and neighbouring-line fragments), time-budgeted, then ship the
# best checkpoint back (float16 weights, restored to float32 on arrival: files come back <= 16 MB).
# Data: IAM packed to 40 px in .devdata/iam40 (python training/pack_folder.py SRC DST --height 40),
# carried to the device (ignored folder), with .whl/ holding the py3.12 wheels the device image lacks
# (rapidfuzz, hershey-fonts: see the device README). Usage on the device: OUT=/dir bash benchmarks/gpu_train.sh MINUTES
# The bundled model's fine-tune used RMSprop at 6e-4 (pinned here since Adam became the package default);
# OPTIMIZER=adam LR=... tries Adam, which is untested on the GPU.
set -u
OUT=${OUT:-/tmp/gpu_out}
MINUTES=${1:-6}
OPTIMIZER=${OPTIMIZER:-rmsprop}
LR=${LR:-6e-4}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"
DATA=.devdata/iam40
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
timeout $(( ${MINUTES%.*} * 60 + 120 )) python3 training/run_experiment.py \
    --data $DATA/train $DATA/train_extra --val-data $DATA/val --height 40 \
    --device cuda --ctc-impl triton --batch-size 48 --optimizer "$OPTIMIZER" --lr "$LR" --warmup-steps 100 --max-epochs 200 \
    --max-minutes "$MINUTES" --num-workers 14 --augment-p 0.6 --sortagrad false --val-every 3 \
    --checkpoint-every 0 --progress false --seed 2 --init-from text_recognizer/artifacts/default.pt \
    --run-dir /tmp/runs/ft > "$OUT/train.log" 2>&1
echo "train exit $?"; tail -8 "$OUT/train.log"
for f in summary.json metrics.jsonl config.json; do cp /tmp/runs/ft/$f "$OUT/ft_$f" 2>/dev/null; done
[ -f /tmp/runs/ft/best.pt ] && python3 -c "
import torch, sys
p = torch.load(sys.argv[1], weights_only=True)
p['model_state'] = {k: (v.half() if v.is_floating_point() else v) for k, v in p['model_state'].items()}
torch.save(p, sys.argv[2])" /tmp/runs/ft/best.pt "$OUT/best_ft_fp16.pt"
ls -la "$OUT"
