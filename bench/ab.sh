#!/usr/bin/env bash
# ab.sh — compare two builds of ./train on the same machine, alternating old, new, old, new, each run
# under SCHED_FIFO 1 when allowed. Not a test. Used for the before/after tables in docs/benchmarks.md.
#   OLD=path/to/old/train NEW=./train [SPECS="vit-tiny-cifar:4 vit-micro-cifar:6"] [THREADS="1 2"] \
#   [ROUNDS=2] [ARGS="--amp"] bash bench/ab.sh          (ARGS: flags added to both, e.g. --amp)
set -u
OLD=${OLD:?set OLD to the older ./train binary}; NEW=${NEW:-./train}
PRIO=""; chrt -f 1 true 2>/dev/null && PRIO="chrt -f 1"
for spec in ${SPECS:-vit-tiny-cifar:4 vit-micro-cifar:6}; do
    P=${spec%%:*}; N=${spec##*:}
    for T in ${THREADS:-1 2}; do
        for ((r = 0; r < ${ROUNDS:-2}; r++)); do
            for which in OLD NEW; do
                echo "$P threads $T $which: $($PRIO "${!which}" --model "$P" --bench "$N" --threads "$T" ${ARGS:-} 2>&1 | grep '^bench:')"
            done
        done
    done
done
