#!/bin/sh
# The GPU checks in one command, for a machine with a CUDA device and no
# package access (the project's lent H100s): builds sente against the host
# libraries carried in .gpu/ (scripts/gpu_pack.sh, run beforehand on the
# development machine) and the CUDA libraries that PyTorch's wheels carry
# (cuDNN, NCCL, cuBLAS), runs the CUDA test suites and the rest of the
# suite, then the GPU benchmarks. Figures go to OUTDIR/bench.jsonl as JSON
# lines (the first line names the device, date and commit), logs beside
# them; a short summary is printed last.
#
# usage: SENTE_COMMIT=$(git rev-parse --short HEAD) scripts/gpu_check.sh [OUTDIR]
#   OUTDIR  default $OUT (the device tool's) or /tmp/sente-gpu
#   SENTE_GPU_TESTS=cuda   only the CUDA suites (default all: the whole suite)
#   SENTE_GPU_BENCH=0      skip the benchmarks
set -u
OUTD=${1:-${OUT:-/tmp/sente-gpu}}
mkdir -p "$OUTD"
G=$PWD/.gpu
[ -d "$G/lib" ] || { echo "gpu_check: no .gpu/: run scripts/gpu_pack.sh on the development machine and carry .gpu" >&2; exit 2; }
NVCC=$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "gpu_check: nvcc not found" >&2; exit 2; }
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null || true)

# First file called $1 under the other arguments (folders that exist).
find_one() {
	n=$1
	shift
	for d in "$@"; do
		[ -n "$d" ] && [ -d "$d" ] && find -L "$d" -name "$n" 2>/dev/null | head -n 1
	done | head -n 1
}
CUDNN_H=$(find_one cudnn.h "$CUDA_HOME/include" /usr/include "$NV")
NCCL_H=$(find_one nccl.h "$CUDA_HOME/include" /usr/include "$NV")
CUDNN_SO=$(find_one 'libcudnn.so.[0-9]*' "$CUDA_HOME/lib64" /usr/lib/x86_64-linux-gnu "$NV")
NCCL_SO=$(find_one 'libnccl.so.[0-9]*' "$CUDA_HOME/lib64" /usr/lib/x86_64-linux-gnu "$NV")
CUBLAS_SO=$(find_one 'libcublas.so.[0-9]*' "$CUDA_HOME/lib64" "$NV")
echo "gpu_check: CUDA $CUDA_HOME; cudnn.h ${CUDNN_H:-none}; nccl.h ${NCCL_H:-none}"
echo "gpu_check: libs ${CUDNN_SO:-no cuDNN} ${NCCL_SO:-no NCCL} ${CUBLAS_SO:-no cuBLAS}"

# Link-time names for libraries that wheels carry only under their soname.
L=$(mktemp -d)
[ -n "$NCCL_SO" ] && ln -s "$NCCL_SO" "$L/libnccl.so"
inc="$G/include"
libp="$G/lib:$L"
for f in "$CUDNN_H" "$NCCL_H"; do [ -n "$f" ] && inc="$inc:$(dirname "$f")"; done
for f in "$CUDNN_SO" "$NCCL_SO" "$CUBLAS_SO"; do [ -n "$f" ] && libp="$libp:$(dirname "$f")"; done
export CPATH="$inc${CPATH:+:$CPATH}"
export LIBRARY_PATH="$libp${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$libp:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

B=build-gpu
echo "gpu_check: building ($(nproc) jobs)"
if ! make -j"$(nproc)" CUDA=1 MPI=0 CUDA_HOME="$CUDA_HOME" ${CUDNN_H:+CUDNN_H="$CUDNN_H"} \
	${NCCL_H:+NCCL_H="$NCCL_H"} BUILD=$B BIN=$B/bin/sente $B/bin/sente $B/tests/sente_tests \
	>"$OUTD/build.log" 2>&1; then
	tail -n 30 "$OUTD/build.log"
	echo "gpu_check: build failed (build.log)"
	exit 1
fi
S=$B/bin/sente
export SENTE_BIN=$PWD/$S

# Tests: the CUDA suites first (their results are what a GPU session is
# for), then the rest.
: >"$OUTD/tests.log"
for f in 'cuda/*' 'nn_cuda/*' 'nn_cuda_pack/*' 'nn_select/*' 'cli_backend/*' 'gpu_replay/*' \
	'gpu_train/*' 'grad_reducer/*' 'launch/*' 'gpu_learner/*'; do
	echo "== $f" >>"$OUTD/tests.log"
	timeout 300 $B/tests/sente_tests --filter "$f" --jobs 4 --verbose >>"$OUTD/tests.log" 2>&1
done
if [ "${SENTE_GPU_TESTS:-all}" = all ]; then
	echo "== all" >>"$OUTD/tests.log"
	timeout 400 $B/tests/sente_tests --jobs "$(nproc)" >>"$OUTD/tests.log" 2>&1
fi

if [ "${SENTE_GPU_BENCH:-1}" != 0 ]; then
	dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
	{
		echo "{\"device\":\"$dev\",\"date\":\"$(date -u +%Y-%m-%d)\",\"commit\":\"${SENTE_COMMIT:-unknown}\"}"
		for p in fp16 fp32; do
			for shape in 10x128 20x256; do
				b=${shape%x*}
				c=${shape#*x}
				timeout 120 $S bench nn --backend cuda --precision $p --blocks $b --channels $c \
					--batch 1,8,64,256 --seconds 1
				timeout 120 $S bench train --backend cuda --precision $p --size 19 --blocks $b \
					--channels $c --batch 256 --steps 20
			done
		done
		timeout 120 $S bench train --backend cuda --precision bf16 --size 19 --blocks 20 \
			--channels 256 --batch 256 --steps 20
		timeout 120 $S bench search --backend cuda -t 8 -b 256 -v 20000 --blocks 20 --channels 256 \
			--repeat 1
	} 2>"$OUTD/bench.err" >"$OUTD/bench.jsonl"
fi

echo "---- summary"
grep -E "^== |Synthesis" "$OUTD/tests.log"
grep -E "^\[FAIL\]|^\[----\].*(Assertion|Test).*failed" "$OUTD/tests.log" | head -n 20
[ -f "$OUTD/bench.jsonl" ] && cut -c1-300 "$OUTD/bench.jsonl"
rm -rf "$L"
