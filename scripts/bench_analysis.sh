#!/bin/sh
# The analysis engine's batching as KaTrain drives it: one JSON query per
# turn (analyzeTurns [k] with the moves so far) for every turn of GAMES
# 19x19 games of MOVES moves, sent at once to `sente analysis`; prints the
# queries answered, the errors, evaluations, batches, mean batch, wall and
# CPU time. The games are played by `sente selfplay` without a network
# (the game's cheap prior: legal, varied, not strong). Extra arguments go
# to `sente analysis`; without a --model among them, a random Leela Zero
# 6x64 network (scripts/lz_random_weights.py) is made and used.
#
# usage: scripts/bench_analysis.sh [-b BIN] [-g GAMES] [-m MOVES] [-v VISITS] [-- ANALYSIS ARGS]
#   defaults: bin/sente, 5 games, 200 moves, 100 visits; e.g.
#   scripts/bench_analysis.sh -v 100 -- --model go19.sente --threads 16 --batch 32
set -eu
BIN=bin/sente GAMES=5 MOVES=200 VISITS=100
while [ $# -gt 0 ]; do
	case $1 in
	-b) BIN=$2; shift 2 ;;
	-g) GAMES=$2; shift 2 ;;
	-m) MOVES=$2; shift 2 ;;
	-v) VISITS=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "bench_analysis: unknown option $1 (see the top of the script)" >&2; exit 2 ;;
	esac
done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# Games long enough for MOVES moves: no resignation, every move searched.
"$BIN" selfplay --db "$W/g.db" --game go --size 19 --games "$GAMES" --visits 2 \
	--cheap-visits 0 --parallel-games "$GAMES" --resign 0 --seed 1 -q >/dev/null
"$BIN" db "$W/g.db" export-sgf "$W/sgf" >/dev/null
python3 - "$W/sgf" "$MOVES" "$VISITS" >"$W/queries.json" <<'EOF'
import json, os, re, sys
folder, moves, visits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
letters = "ABCDEFGHJKLMNOPQRST"
def gtp(xy):
    if xy == "" or xy == "tt":
        return "pass"
    x, y = ord(xy[0]) - 97, ord(xy[1]) - 97
    return f"{letters[x]}{19 - y}"
for name in sorted(os.listdir(folder)):
    text = open(os.path.join(folder, name)).read()
    played = [[c, gtp(xy)] for c, xy in re.findall(r";([BW])\[([a-s]{0,2})\]", text)][:moves]
    for k in range(len(played) + 1):
        print(json.dumps({"id": f"{name}-{k}", "moves": played, "rules": "chinese",
                          "komi": 7.5, "boardXSize": 19, "boardYSize": 19,
                          "analyzeTurns": [k], "maxVisits": visits}))
EOF
# Without a network among the arguments, a random Leela Zero 6x64 one.
case " $* " in
*" --model "* | *" -model "* | *" -w "* | *" --weights "*) ;;
*)
	python3 "$(dirname "$0")/lz_random_weights.py" 6 64 1 "$W/lz6x64.txt"
	set -- --model "$W/lz6x64.txt" "$@"
	;;
esac
n=$(wc -l <"$W/queries.json")
t0=$(date +%s.%N)
/usr/bin/time -f '%U %S' -o "$W/cpu" "$BIN" analysis "$@" <"$W/queries.json" >"$W/out.json" \
	2>"$W/err.txt"
t1=$(date +%s.%N)
answered=$(grep -c '"turnNumber"' "$W/out.json" || true)
errors=$(grep -c '"error"' "$W/out.json" || true)
stats=$(grep "evaluations in" "$W/err.txt" | tail -n 1)
evals=$(echo "$stats" | sed -n 's/.* \([0-9]*\) evaluations in \([0-9]*\) batches (mean batch \([0-9.]*\)).*/\1/p')
batches=$(echo "$stats" | sed -n 's/.* \([0-9]*\) evaluations in \([0-9]*\) batches (mean batch \([0-9.]*\)).*/\2/p')
mean=$(echo "$stats" | sed -n 's/.* \([0-9]*\) evaluations in \([0-9]*\) batches (mean batch \([0-9.]*\)).*/\3/p')
wall=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')
cpu=$(awk '{printf "%.1f", $1 + $2}' "$W/cpu")
echo "{\"bench\":\"analysis\",\"queries\":$n,\"answered\":$answered,\"errors\":$errors,\"visits\":$VISITS,\"evaluations\":${evals:-0},\"batches\":${batches:-0},\"mean_batch\":${mean:-0},\"wall_s\":$wall,\"cpu_s\":$cpu,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
