#!/bin/sh
# download_cifar10.sh — fetch the official CIFAR-10 binary version into ./data/ (or $1).
#   sh data/download_cifar10.sh [DEST]     ->  DEST/cifar-10-batches-bin/
# Needs curl or wget and network access; checks the MD5 published on the CIFAR page.
set -u
URL="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
MD5="c32a1d4ab5d03f1284b67883e8d87530"
DEST="${1:-$(dirname "$0")}"
OUT="$DEST/cifar-10-batches-bin"
TAR="$DEST/cifar-10-binary.tar.gz"

if [ -f "$OUT/data_batch_1.bin" ] && [ -f "$OUT/test_batch.bin" ]; then
    echo "CIFAR-10 already present in $OUT"
    exit 0
fi
mkdir -p "$DEST" || { echo "error: cannot create $DEST" >&2; exit 1; }

if [ ! -f "$TAR" ]; then
    echo "downloading $URL (about 163 MB)"
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --connect-timeout 20 -o "$TAR.part" "$URL"; rc=$?
    elif command -v wget >/dev/null 2>&1; then
        wget -T 20 -t 2 -O "$TAR.part" "$URL"; rc=$?
    else
        echo "error: neither curl nor wget is installed; download $URL by hand into $DEST/" >&2
        exit 1
    fi
    if [ "$rc" -ne 0 ]; then
        rm -f "$TAR.part"
        echo "error: could not download $URL (exit code $rc): no network connection, or the server is unreachable." >&2
        echo "       Copy cifar-10-binary.tar.gz into $DEST/ by hand and run this script again," >&2
        echo "       or point CIFAR10_DIR at an existing cifar-10-batches-bin folder." >&2
        exit 1
    fi
    mv "$TAR.part" "$TAR"
fi

if command -v md5sum >/dev/null 2>&1; then
    got=$(md5sum "$TAR" | cut -d' ' -f1)
else
    got=$(openssl md5 -r "$TAR" 2>/dev/null | cut -d' ' -f1)
fi
if [ "$got" != "$MD5" ]; then
    echo "error: $TAR has MD5 $got, expected $MD5 (incomplete or wrong file); delete it and retry" >&2
    exit 1
fi
tar -xzf "$TAR" -C "$DEST" || { echo "error: cannot unpack $TAR" >&2; exit 1; }
echo "CIFAR-10 unpacked into $OUT"
