#!/bin/sh
# CPU training speed of sente against PyTorch on the same network and threads.
#
# usage: scripts/bench_train_vs_torch.sh [SIZE BLOCKS CHANNELS BATCH STEPS THREADS ROUNDS]
#   defaults 19 6 64 64 20 2 3 (issue 23's network: 6x64 19x19 Go, batch 64)
#
# `sente bench train --save` writes the random network it trains; then, ROUNDS
# times in turn, the same steps are timed by `sente bench train` (Winograd
# where oneDNN has it, the default, and --algo direct; --precision bf16 too
# where the CPU has AVX-512 BF16) and by scripts/bench_train_torch.py
# (PyTorch fp32, NCHW and channels-last, with Debian's python3-torch). Prints every JSON line, then one line with each
# path's median samples/s and sente's ratio to PyTorch's faster layout.
# Run it on a quiet machine: the rounds are interleaved so that a load
# that comes and goes touches every path, but the figures mean most when
# nothing else runs.
set -eu
BIN=${BIN:-bin/sente}
PY=${PYTHON_TORCH:-/usr/bin/python3}
SIZE=${1:-19} BLOCKS=${2:-6} CH=${3:-64} BATCH=${4:-64} STEPS=${5:-20} THREADS=${6:-2} ROUNDS=${7:-3}
[ -x "$BIN" ] || { echo "bench_train_vs_torch: $BIN not built (make)" >&2; exit 2; }
"$PY" -c 'import torch' 2>/dev/null ||
	{ echo "bench_train_vs_torch: $PY has no torch (apt-get install python3-torch)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
net="--size $SIZE --blocks $BLOCKS --channels $CH --batch $BATCH --threads $THREADS"
# shellcheck disable=SC2086
"$BIN" bench train $net --steps 1 --save "$dir/net.sente" >/dev/null
bf16=0
# shellcheck disable=SC2086
"$BIN" bench train $net --steps 1 --precision bf16 >/dev/null 2>&1 && bf16=1
r=1
while [ "$r" -le "$ROUNDS" ]; do
	# shellcheck disable=SC2086
	"$BIN" bench train $net --steps "$STEPS" | tee -a "$dir/lines"
	# shellcheck disable=SC2086
	"$BIN" bench train $net --steps "$STEPS" --algo direct | tee -a "$dir/lines"
	if [ "$bf16" = 1 ]; then
		# shellcheck disable=SC2086
		"$BIN" bench train $net --steps "$STEPS" --precision bf16 | tee -a "$dir/lines"
	fi
	for layout in nchw nhwc; do
		"$PY" "$(dirname "$0")/bench_train_torch.py" "$dir/net.sente" "$BATCH" "$STEPS" \
			"$THREADS" "$layout" | tee -a "$dir/lines"
	done
	r=$((r + 1))
done
"$PY" - "$dir/lines" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j["backend"] == "cpu":
        key = "sente_" + ("bf16" if j.get("precision") == "bf16" else j["conv"])
    else:
        key = "pytorch_" + j["layout"]
    runs.setdefault(key, []).append(j["samples_per_s"])
med = {k: statistics.median(v) for k, v in runs.items()}
torch_best = max(med.get("pytorch_nchw", 0), med.get("pytorch_nhwc", 0))
out = {"bench": "train_vs_pytorch", "rounds": len(runs.get("pytorch_nchw", []))}
out.update({k + "_samples_per_s": round(v, 2) for k, v in sorted(med.items())})
for k in sorted(med):
    if k.startswith("sente_") and torch_best > 0:
        out["ratio_" + k[6:]] = round(med[k] / torch_best, 2)
print(json.dumps(out))
EOF
