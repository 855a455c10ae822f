#!/usr/bin/env bash
# `make demo`: what torch2ms says about the bundled example project, then the port proven.
set -euo pipefail
cd "$(dirname "$0")/.."
T=.venv/bin/torch2ms
PY=.venv/bin/python
OUT=out/demo
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "torch2ms doctor"
$T doctor
step "torch2ms kb stats"
$T kb stats
step "torch2ms lookup nn.Conv2d"
$T lookup nn.Conv2d
step "torch2ms scan examples/simple_cnn"
$T scan examples/simple_cnn
step "torch2ms convert examples/simple_cnn -o $OUT/simple_cnn_ms"
$T convert examples/simple_cnn -o $OUT/simple_cnn_ms
sed -n '1,200p' $OUT/simple_cnn_ms/model.py
step "PyTorch: build the example model, save weights, input and output"
$PY examples/demo/torch_export.py $OUT
step "torch2ms weights $OUT/simple_cnn.pth -o $OUT/simple_cnn.ckpt --net $OUT/simple_cnn_ms/model.py:build"
$T weights $OUT/simple_cnn.pth -o $OUT/simple_cnn.ckpt --net $OUT/simple_cnn_ms/model.py:build
step "MindSpore: converted model + converted weights, same input"
$PY examples/demo/ms_verify.py $OUT/simple_cnn_ms $OUT
step "torch2ms compare: layer by layer, then 50 training steps from the same init and data"
$T compare --torch examples/simple_cnn/model.py:build --ms $OUT/simple_cnn_ms/model.py:build \
  --input-shape 8,3,32,32 --train-steps 50 --out $OUT/compare
echo "open $OUT/compare/report.html for the per-layer error and loss-curve plots"
