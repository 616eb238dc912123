#!/bin/sh
# Regenerate the pictures of docs/tutorial.md and check every program output it (and README.md)
# quotes against what the programs print now.
#   sh docs/tutorial_assets.sh [RUN_DIR] [NAME=DIR ...]
# RUN_DIR: the tutorial's training run (model.safetensors, metrics.csv), shown as runs/cifar10 in
# the outputs; NAME=DIR: another run a quoted command names as runs/NAME (e.g.
# long-ta-stem-s0=runs/long-ta-stem-s0). Without them the outputs that need a run are skipped,
# visibly, and so are their pictures.
#
# build/docs_check (tests/tools/docs_check.c) runs each quoted command in a scratch directory whose
# docs/img/ is this repository's docs/img/, so the pictures land here, and compares the quoted lines
# with the program's output; on a mismatch it prints the output now, to paste into the page.
# --slow: also the profile and the k-NN runs (12,000 images each: minutes on two cores). `make
# test` runs the same check without --slow and without the runs.
set -e
make --no-print-directory -j2 all build/docs_check
ARGS="--bin . --slow --images docs/img"
RUN=""
if [ $# -gt 0 ] && [ "${1#*=}" = "$1" ]; then RUN=$1; ARGS="$ARGS --run cifar10=$1"; shift; fi
for m in "$@"; do ARGS="$ARGS --run $m"; done
# the graph picture: one block as the textbook draws it (graphviz's dot; the tutorial quotes the
# command's output, which the check below compares)
if command -v dot >/dev/null; then
    T=$(mktemp -d)
    ./inspect graph --model vit-micro-cifar --depth 1 --full-last-block --out "$T/graph.dot" >/dev/null
    dot -Tpng -Gdpi=45 "$T/graph.dot" -o docs/img/graph.png
    rm -rf "$T"
else echo "tutorial_assets: no graphviz (dot): docs/img/graph.png not redrawn"; fi
# the report's screenshots (docs/img/report_*.png): the page of RUN_DIR, groups of views alone
# (the page's #only=… fragment), at the last snapshot or (&snap=1) the second; Debian's chromium
# draws them and python3-pil trims the empty space below the last view. A RUN_DIR …/runs/NAME is
# reported from the folder above runs/, so the page names it runs/NAME, as the tutorial does.
if [ -n "$RUN" ] && [ -d "$RUN" ] && command -v chromium >/dev/null && /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
    T=$(mktemp -d); HERE=$(pwd)
    case "$RUN" in */runs/*) (cd "${RUN%/runs/*}" && "$HERE/inspect" report "runs/${RUN##*/runs/}" --out "$T/report.html" | tail -1) ;;
                   *) ./inspect report "$RUN" --out "$T/report.html" | tail -1 ;; esac
    for v in "overview:header,e2e,curves" "attention:attention,embeddings" "attention_early:attention&snap=1" \
             "predictions:predictions,health,pca"; do
        chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2600 \
            --screenshot="$T/${v%%:*}.png" "file://$T/report.html#only=${v#*:}" >/dev/null 2>&1
        /usr/bin/python3 - "$T/${v%%:*}.png" "docs/img/report_${v%%:*}.png" <<'PY'
import sys
from PIL import Image, ImageChops
im = Image.open(sys.argv[1]).convert("RGB")
bg = Image.new("RGB", im.size, im.getpixel((im.width - 1, im.height - 1)))
box = ImageChops.difference(im, bg).getbbox()
im.crop((0, 0, im.width, min(im.height, box[3] + 16))).save(sys.argv[2], optimize=True)
print("wrote", sys.argv[2], im.width, "x", min(im.height, box[3] + 16))
PY
    done
    rm -rf "$T"
else echo "tutorial_assets: no run, chromium or python3-pil: docs/img/report_*.png not redrawn"; fi
# shellcheck disable=SC2086
build/docs_check $ARGS docs/tutorial.md README.md
ls -l docs/img
