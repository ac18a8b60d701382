#!/usr/bin/env bash
# The GPU commands of benchmarks/RESULTS.md in one run, each under its own time cap, so that a lent machine's few
# minutes give every benchmark a figure (sizes cut from the paper-scale workloads to fit; times scale linearly).
# Usage (from the repository root, on a machine with CUDA): benchmarks/gpu.sh [OUTDIR]
# Each benchmark's output goes to OUTDIR/<name>.log (default: gpu-logs/). GPU_ONLY="autobatch cli" runs only the named
# benchmarks (a lease too short for all of them).
set -u
out=${1:-gpu-logs}
mkdir -p "$out"
export PYTHONPATH=lib${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
run() {  # run CAP NAME ARGS...: one benchmark, killed after CAP seconds
    local cap=$1 name=$2; shift 2
    if [ -n "${GPU_ONLY:-}" ] && [[ " $GPU_ONLY " != *" $name "* ]]; then return; fi
    local start=$SECONDS
    echo "== $name (cap ${cap} s): $*" | tee -a "$out/$name.log"
    timeout -k 5 "$cap" "$py" "$@" >>"$out/$name.log" 2>&1
    echo "== $name: exit $? after $((SECONDS - start)) s" | tee -a "$out/$name.log"
}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$py" -c "import torch, faithlab; print('torch', torch.__version__, torch.cuda.get_device_name(0))"; } \
    2>&1
run 60 library_overhead benchmarks/library_overhead.py --device cuda --repeats 3
run 50 removal_curve benchmarks/removal_curve.py --device cuda --n 4096 --sweep --repeats 3
run 70 saco benchmarks/saco.py --device cuda --paper-scale --sweep --n 256 --repeats 2
run 70 ffidelity benchmarks/ffidelity.py --device cuda --paper-scale --sweep --n 128 --repeats 2
run 70 fewclass benchmarks/fewclass.py --device cuda --paper-scale --sweep --n 16 --repeats 2
run 110 trace benchmarks/trace.py --device cuda --paper-scale --sweep --n 16 --repeats 2
run 60 reco_mege benchmarks/reco_mege.py --device cuda --paper-scale --sweep --repeats 2
# ROAD against pytorch-grad-cam (our side on the GPU): the peer only where its environment was made beforehand (uv needs
# the network once), else --skip-peer
gradcam_env=${FAITHLAB_GRADCAM_ENV:-$HOME/.cache/faithlab-bench/grad-cam-1.5.7}
run 90 road_peer benchmarks/road_peer.py --device cuda --n 32 --repeats 3 \
    $([ -f "$gradcam_env/.faithlab-gradcam-ready" ] || echo --skip-peer)
# the default batch size against every fixed size, one thread count (a GPU's best size does not depend on it), the
# cells the issue names first (two stand-ins, ResNet-18 and the ViT at 32, 64 and 224 px), then the other stand-ins and
# the small CNN. The ladder starts at 32: on the GPU sizes 8 and
# 16 were 35x and 18x the best in the first run's cell and took most of its 110 s; the default is always timed too.
run 300 autobatch benchmarks/autobatch_sweep.py --device cuda --scale 8 --repeats 2 --skip-auto --threads 1 \
    --ladder 32 64 128 256 512 1024 2048 4096 --csv "$out/autobatch.csv" \
    --models ${SWEEP_MODELS:-digits_cnn resnet9 resnet18 vit vit_digits resnet18_cifar small_cnn}
# faithlab evaluate end to end on the GPU, ResNet-18 at 224 px, two explainers: 4 random images under a 2-minute
# budget the paper's counts fit (the estimate beside the measured time), then 64 images under a 1-minute budget that cuts
# the Monte-Carlo counts (does the run keep to it?)
"$py" - "${TMPDIR:-/tmp}/gpu-imgs" "${TMPDIR:-/tmp}/gpu-imgs64" <<'PY'
import sys, pathlib
import numpy as np
from PIL import Image
for root, per_class in ((pathlib.Path(sys.argv[1]), 2), (pathlib.Path(sys.argv[2]), 32)):
    for c in "ab":
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = np.random.default_rng([ord(c), i]).integers(0, 256, (224, 224, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.png")
PY
cli_run() {  # cli_run CAP NAME IMAGES BUDGET: one evaluate run; its estimate.csv and cost.csv go to OUTDIR/NAME_*
    local cap=$1 name=$2 images=$3 budget=$4
    run "$cap" "$name" -m faithlab evaluate --model torchvision:resnet18 --random-weights --images "$images" \
        --device cuda --explainers saliency,gradcam --budget "$budget" --yes --maps 0 --out "${TMPDIR:-/tmp}/$name"
    for f in estimate.csv cost.csv; do  # the estimate beside the measured seconds, per group and per metric
        [ -f "${TMPDIR:-/tmp}/$name/$f" ] && cp "${TMPDIR:-/tmp}/$name/$f" "$out/${name}_$f"
    done
}
cli_run 200 cli "${TMPDIR:-/tmp}/gpu-imgs" 2m
cli_run 150 cli_budget "${TMPDIR:-/tmp}/gpu-imgs64" 1m
