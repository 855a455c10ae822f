#!/usr/bin/env bash
# `make demo`: what torch2ms says about the bundled example project.
set -euo pipefail
cd "$(dirname "$0")/.."
T=.venv/bin/torch2ms
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "torch2ms doctor"
$T doctor
step "torch2ms kb stats"
$T kb stats
step "torch2ms lookup nn.Conv2d"
$T lookup nn.Conv2d
step "torch2ms lookup nn.BatchNorm2d"
$T lookup nn.BatchNorm2d
step "torch2ms scan examples/simple_cnn"
$T scan examples/simple_cnn
