#!/bin/sh
# Self-play's network evaluations per second against `sente bench nn` on the
# same model, precision, threads, lanes and batch, in interleaved rounds.
#
# usage: scripts/bench_selfplay_vs_nn.sh MODEL [GAMES] [ROUNDS] [PRECISION]
#   MODEL      a .sente model (a run's models/ file)
#   GAMES      parallel-games values to measure (default "16 32 64")
#   ROUNDS     rounds of the whole list (default 2)
#   PRECISION  int8, bf16 or fp32 (default int8)
#
# Per games value and round: `sente selfplay -w MODEL --parallel-games G
# --batch G` with its default lanes (one per core) for 32 seconds, its
# evaluations/s the mean of the progress lines after the first 10 seconds
# (model loading and the first searches left out); then `sente bench nn`
# with as many lanes, each at self-play's lane batch (the games over the
# lanes), measuring for 20 seconds, about as long as self-play's figure
# (a 2-second figure swung by 5-10% with the machine's hour). Then the same pair for the layout sente had before lanes: one
# network on every thread, a worker thread per game, batch G
# (`--nn-lanes 1 --games-per-thread 1`). One JSON line each; run it on a
# quiet machine.
set -eu
BIN=${BIN:-bin/sente}
MODEL=${1:?usage: bench_selfplay_vs_nn.sh MODEL [GAMES] [ROUNDS] [PRECISION]}
GAMES=${2:-"16 32 64"}
ROUNDS=${3:-2}
PREC=${4:-int8}
[ -x "$BIN" ] || { echo "bench_selfplay_vs_nn: $BIN not built (make)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
LANES=$(getconf _NPROCESSORS_ONLN)
[ "$LANES" -le 16 ] || LANES=16

# selfplay_eps G EXTRA...: steady evaluations/s and mean batch of one run.
selfplay_eps() {
	g=$1
	shift
	rm -f "$dir/sp.db"*
	"$BIN" selfplay --db "$dir/sp.db" -w "$MODEL" --precision "$PREC" --parallel-games "$g" \
		--batch "$g" --games 100000 --minutes 0.55 --json -q "$@" 2>/dev/null |
		awk -F'[:,]' '/"progress"/ { n++; if (n < 2) next
			for (i = 1; i < NF; i++) {
				if ($i == "\"evals_per_s\"") e += $(i + 1)
				if ($i == "\"mean_batch\"") b += $(i + 1)
			}
			k++ }
			END { if (k) printf "%.1f %.2f\n", e / k, b / k; else print "0 0" }'
}

# bench_eps BATCH LANES: bench nn's evaluations/s.
bench_eps() {
	"$BIN" bench nn -w "$MODEL" --precision "$PREC" --batch "$1" --lanes "$2" \
		--accuracy-positions 0 --seconds 20 2>/dev/null |
		sed -n 's/.*"evals_per_s":\([0-9.]*\).*/\1/p' | tail -n 1
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
	for g in $GAMES; do
		lb=$(( (g + LANES - 1) / LANES ))
		set -- $(selfplay_eps "$g")
		sp=$1 spb=$2
		nn=$(bench_eps "$lb" "$LANES")
		set -- $(selfplay_eps "$g" --nn-lanes 1 --games-per-thread 1)
		sp1=$1 spb1=$2
		nn1=$(bench_eps "$g" 1)
		awk -v r="$r" -v g="$g" -v l="$LANES" -v lb="$lb" -v p="$PREC" -v sp="$sp" -v spb="$spb" \
			-v nn="$nn" -v sp1="$sp1" -v spb1="$spb1" -v nn1="$nn1" 'BEGIN {
			printf "{\"bench\":\"selfplay_vs_nn\",\"round\":%d,\"games\":%d,\"precision\":\"%s\",", r, g, p
			printf "\"lanes\":%d,\"lane_batch\":%d,\"selfplay_evals_per_s\":%s,\"selfplay_mean_batch\":%s,", l, lb, sp, spb
			printf "\"nn_evals_per_s\":%s,\"ratio\":%.3f,", nn, (nn > 0 ? sp / nn : 0)
			printf "\"one_lane_selfplay_evals_per_s\":%s,\"one_lane_mean_batch\":%s,", sp1, spb1
			printf "\"one_lane_nn_evals_per_s\":%s,\"one_lane_ratio\":%.3f,", nn1, (nn1 > 0 ? sp1 / nn1 : 0)
			printf "\"lanes_gain\":%.2f}\n", (sp1 > 0 ? sp / sp1 : 0)
		}'
	done
	r=$((r + 1))
done
