#!/usr/bin/env bash
# `make demo`: torch2ms on the bundled example project (examples/project: an ImageFolder CNN, an LSTM
# text classifier, a tiny GPT, each with its training script): scan, convert, check the data pipeline,
# convert the weights, compare layer by layer, then run each training script and its conversion side by side
# (torch2ms compare-train: 50 steps from the same init and data).
set -euo pipefail
cd "$(dirname "$0")/.."
T=.venv/bin/torch2ms
PY=.venv/bin/python
OUT=out/demo
MS=$OUT/project_ms
export GLOG_v=${GLOG_v:-3}  # MindSpore: errors only
# MindSpore's bundled oneDNN uses a naive convolution on AVX-512 CPUs; AVX2 gets its JIT kernels (doctor says so).
export ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2}
export MS_DEV_LAUNCH_BLOCKING=${MS_DEV_LAUNCH_BLOCKING:-1} MS_DEV_HOST_BLOCKING_RUN=${MS_DEV_HOST_BLOCKING_RUN:-1}  # CPU: single-threaded dispatch
export SHAPES_DIR=$OUT/shapes  # where examples/project/data.py (and its conversion) keep the generated images
start=$SECONDS
step() { printf '\n\033[1m== %s\033[0m  (%ds)\n' "$*" $((SECONDS - start)); }
rm -rf "$MS" "$SHAPES_DIR"

step "torch2ms doctor"
$T doctor
step "torch2ms kb stats"
$T kb stats
step "torch2ms lookup nn.Conv2d"
$T lookup nn.Conv2d
step "torch2ms scan examples/project"
$T scan examples/project
step "torch2ms convert examples/project -o $MS"
$T convert examples/project -o $MS
echo "-- the CNN's training loop, converted ($MS/train_cnn.py):"
sed -n '/^def train(/,/^    return losses/p' $MS/train_cnn.py
echo "-- the ImageFolder pipeline, converted ($MS/data.py):"
sed -n '/^def image_loaders(/,/^    return train_loader/p' $MS/data.py

step "PyTorch: generate the shapes ImageFolder, save the CNN's initial weights and 50 training batches"
$PY examples/demo/project_torch.py $OUT
step "torch2ms check-data: the torch ImageFolder pipeline vs its conversion"
$T check-data --torch examples/project/data.py:val_loader --ms $MS/data.py:val_loader --batches 2 --out $OUT/check_data
step "torch2ms weights $OUT/cnn_init.pth -o $OUT/cnn_init.ckpt --net $MS/models.py:SmallCNN"
$T weights $OUT/cnn_init.pth -o $OUT/cnn_init.ckpt --net $MS/models.py:SmallCNN
# compare runs in the background (2 cores) while compare-train runs the example's three training scripts
# and their conversions, unmodified, side by side; the outputs are printed in order.
# Plain SGD in compare: with momentum 0.9 this CNN's 50-step trajectory amplifies float32 rounding (a loss
# 1e-7 apart grows ~1.2x a step from about step 20), and compare also judges the trained parameters.
$T compare --torch examples/project/models.py:SmallCNN --ms $MS/models.py:SmallCNN --weights $OUT/cnn_init.pth \
  --inputs $OUT/cnn_batches.npz --train-steps 50 --optimizer sgd --lr 0.02 --momentum 0 --out $OUT/compare \
  > $OUT/compare.log 2>&1 &
compare_pid=$!
train_rc=0
for run in "train_cnn.py --epochs 15" "train_lstm.py --epochs 10" "train_gpt.py --steps 50"; do
  set -- $run
  name=${1%.py}
  shift
  $T compare-train --torch examples/project/$name.py --ms $MS/$name.py --steps 50 --mode graph \
    --out $OUT/compare_train/$name -- "$@" > $OUT/compare_train_$name.log 2>&1 || train_rc=$?
done
if wait $compare_pid; then compare_rc=0; else compare_rc=$?; fi
step "torch2ms compare: layer by layer, then 50 SGD steps on the pipeline's batches"
cat $OUT/compare.log
for name in train_cnn train_lstm train_gpt; do
  step "torch2ms compare-train --torch examples/project/$name.py --ms $MS/$name.py --steps 50 --mode graph"
  cat $OUT/compare_train_$name.log
done
step "torch2ms export: the converted CNN with the converted weights as MindIR, reloaded and checked"
$T export --net $MS/models.py:SmallCNN --ckpt $OUT/cnn_init.ckpt --input-shape 1,3,16,16 -o $OUT/cnn.mindir
echo
echo "open $OUT/compare/report.html for the per-layer error and loss-curve plots,"
echo "and $OUT/compare_train/*/report.html for the training scripts' loss curves side by side"
echo "demo finished in $((SECONDS - start)) s"
exit $((compare_rc || train_rc))
