#!/usr/bin/env bash
# The GPU commands of benchmarks/RESULTS.md in one run, each under its own time cap, so that a lent machine's few
# minutes give every benchmark a figure (sizes cut from the paper-scale workloads to fit; times scale linearly).
# Usage (from the repository root, on a machine with CUDA): benchmarks/gpu.sh [OUTDIR]
# Each benchmark's output goes to OUTDIR/<name>.log (default: gpu-logs/).
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
export PYTHONPATH=lib${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
run() {  # run CAP NAME ARGS...: one benchmark, killed after CAP seconds
    local cap=$1 name=$2; shift 2
    local start=$SECONDS
    echo "== $name (cap ${cap} s): $*" | tee -a "$out/$name.log"
    timeout -k 5 "$cap" "$py" "$@" >>"$out/$name.log" 2>&1
    echo "== $name: exit $? after $((SECONDS - start)) s" | tee -a "$out/$name.log"
}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$py" -c "import torch, faithlab; print('torch', torch.__version__, torch.cuda.get_device_name(0))"; } \
    2>&1
run 50 removal_curve benchmarks/removal_curve.py --device cuda --n 4096 --sweep --repeats 3
run 70 saco benchmarks/saco.py --device cuda --paper-scale --sweep --n 256 --repeats 2
run 70 ffidelity benchmarks/ffidelity.py --device cuda --paper-scale --sweep --n 128 --repeats 2
run 70 fewclass benchmarks/fewclass.py --device cuda --paper-scale --sweep --n 16 --repeats 2
run 110 trace benchmarks/trace.py --device cuda --paper-scale --sweep --n 16 --repeats 2
run 60 reco_mege benchmarks/reco_mege.py --device cuda --paper-scale --sweep --repeats 2
# the default batch size against every fixed size, one thread count (a GPU's best size does not depend on it),
# the study's stand-ins first (the cells the CPU sweep could not settle on a GPU)
run 110 autobatch benchmarks/autobatch_sweep.py --device cuda --scale 16 --repeats 2 --skip-auto --threads 1 \
    --models digits_cnn resnet9 small_cnn resnet18 vit --csv "$out/autobatch.csv"
# faithlab evaluate end to end on the GPU: 4 random 224 px images, ResNet-18, two explainers, a 2-minute budget
"$py" - "${TMPDIR:-/tmp}/gpu-imgs" <<'PY'
import sys, pathlib
import numpy as np
from PIL import Image
root = pathlib.Path(sys.argv[1])
for c in "ab":
    (root / c).mkdir(parents=True, exist_ok=True)
    for i in range(2):
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(root / c / f"{i}.png")
PY
run 200 cli -m faithlab evaluate --model torchvision:resnet18 --random-weights --images "${TMPDIR:-/tmp}/gpu-imgs" --device cuda \
    --explainers saliency,gradcam --budget 2m --yes --maps 0 --out "${TMPDIR:-/tmp}/gpu-report"
cp "${TMPDIR:-/tmp}/gpu-report/estimate.csv" "$out/cli_estimate.csv" 2>/dev/null
