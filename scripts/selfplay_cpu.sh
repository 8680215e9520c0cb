#!/bin/sh
# Where self-play's CPU goes: CPU microseconds per network evaluation of
# the threads that search the trees (named sente-play) and of those that
# run the network (sente-nn, the evaluator's lanes), from
# /proc/PID/task while `sente selfplay` runs. CPU time, not wall time: the
# hour's speed and a neighbour's load move it far less than evaluations
# per second, so two builds compare in a few rounds.
#
# usage: scripts/selfplay_cpu.sh MODEL [GAMES] [SECONDS] [PRECISION] [ROUNDS]
#   MODEL      a .sente model or Leela Zero weights
#   GAMES      parallel games, also the batch (default 64)
#   SECONDS    self-play time per round (default 25)
#   PRECISION  int8, bf16 or fp32 (default int8)
#   ROUNDS     rounds (default 1)
# BIN names the binary (default bin/sente). One JSON line per round.
set -eu
BIN=${BIN:-bin/sente}
MODEL=${1:?usage: selfplay_cpu.sh MODEL [GAMES] [SECONDS] [PRECISION] [ROUNDS]}
GAMES=${2:-64}
SECS=${3:-25}
PREC=${4:-int8}
ROUNDS=${5:-1}
[ -x "$BIN" ] || { echo "selfplay_cpu: $BIN not built (make)" >&2; exit 2; }
[ -d /proc/self/task ] || { echo "selfplay_cpu: needs /proc (Linux)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
hz=$(getconf CLK_TCK)

# ticks PID: "play nn" CPU ticks (user + system) of the named threads.
ticks() {
	for t in /proc/"$1"/task/*; do
		printf '%s %s\n' "$(cat "$t/comm" 2>/dev/null)" "$(cut -d' ' -f14,15 "$t/stat" 2>/dev/null)"
	done | awk '$1 == "sente-play" { p += $2 + $3 } $1 == "sente-nn" { n += $2 + $3 }
		END { print p + 0, n + 0 }'
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
	rm -f "$dir"/sp.db*
	"$BIN" selfplay --db "$dir/sp.db" -w "$MODEL" --precision "$PREC" --parallel-games "$GAMES" \
		--batch "$GAMES" --games 100000000 --minutes "$(awk -v s="$SECS" 'BEGIN { print s / 60 }')" --json -q \
		>"$dir/out" 2>"$dir/err" &
	pid=$!
	last="0 0"
	# The last reading before the threads end (they end with the run).
	while kill -0 "$pid" 2>/dev/null; do
		now=$(ticks "$pid")
		case $now in "0 "* | *" 0") ;; *) last=$now ;; esac
		sleep 0.2
	done
	wait "$pid" || { cat "$dir/err" >&2; exit 1; }
	evals=$(sed -n 's/.*"selfplay":"done".*"evals":\([0-9]*\).*/\1/p' "$dir/out")
	echo "$last" | awk -v e="${evals:-0}" -v hz="$hz" -v g="$GAMES" -v p="$PREC" -v r="$r" '{
		if (e == 0 || $1 == 0 || $2 == 0) { print "selfplay_cpu: no reading" > "/dev/stderr"; exit 1 }
		t = $1 / hz / e * 1e6; n = $2 / hz / e * 1e6
		printf "{\"bench\":\"selfplay_cpu\",\"round\":%d,\"games\":%d,\"precision\":\"%s\",\"evals\":%d,\"tree_us_per_eval\":%.2f,\"nn_us_per_eval\":%.2f,\"tree_per_nn\":%.3f}\n", r, g, p, e, t, n, t / n }'
	r=$((r + 1))
done
