#!/bin/sh
# Regenerate the outputs and pictures of docs/tutorial.md from a training run.
#   sh docs/tutorial_assets.sh RUN_DIR [OUT_TXT_DIR]
# RUN_DIR holds model.safetensors and metrics.csv (e.g. runs/cifar10). Text outputs go to
# OUT_TXT_DIR (default /tmp/tutorial), pictures to docs/img/. Paste the text into the tutorial.
# The k-NN runs embed 12,000 images each (a few minutes on two cores).
set -e
RUN=${1:?usage: sh docs/tutorial_assets.sh RUN_DIR [OUT_TXT_DIR]}
T=${2:-/tmp/tutorial}
D="--dataset cifar10 --index 1"
mkdir -p "$T" docs/img
./inspect examples                                                   > "$T/examples.txt"
./inspect patches $D --patch 4 --out docs/img/patches.png            > "$T/patches.txt"
./inspect trace --model vit-micro-cifar --batch 1                    > "$T/trace.txt"
./inspect graph --model vit-micro-cifar --depth 1 --out "$T/graph.dot" > "$T/graph.txt"
if command -v dot >/dev/null; then dot -Tpng -Gdpi=45 "$T/graph.dot" -o docs/img/graph.png; fi
./inspect posembed --sincos                                          > "$T/posembed_sincos768.txt"
./inspect posembed --sincos --grid 8 --dim 128 --out docs/img/posembed_sincos.png > "$T/posembed_sincos.txt"
./inspect posembed --random --grid 8 --dim 128 --out docs/img/posembed_random.png > "$T/posembed_random.txt"
./inspect posembed --model vit-micro-cifar --out docs/img/posembed_init.png       > "$T/posembed_init.txt"
./inspect posembed --ckpt "$RUN/model.safetensors" --out docs/img/posembed_trained.png > "$T/posembed_trained.txt"
./inspect attention --model vit-micro-cifar $D --out docs/img/attention_init.png  > "$T/attention_init.txt"
./inspect attention --ckpt "$RUN/model.safetensors" $D --out docs/img/attention_trained.png > "$T/attention_trained.txt"
./inspect plot --csv "$RUN/metrics.csv" --out docs/img/curves.png   > "$T/plot.txt"
AUG="--aa rand-m9-mstd0.5-inc1 --reprob 0.25 --mixup 0.8 --cutmix 1.0 --n 8"
./inspect augment $AUG --step 4 --out docs/img/augment_cutmix.png    > "$T/augment_cutmix.txt"
./inspect augment $AUG --step 7 --out docs/img/augment_mixup.png     > "$T/augment_mixup.txt"
./inspect embed --model vit-micro-cifar --dataset cifar10 --limit-train 10000 --limit-test 2000 > "$T/embed_init.txt"
./inspect embed --ckpt "$RUN/model.safetensors" --dataset cifar10 --limit-train 10000 --limit-test 2000 > "$T/embed_trained.txt"
ls -l docs/img
echo "outputs in $T"
