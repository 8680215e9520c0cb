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
# The run, timed, and its closing line read by Python (no /usr/bin/time
# needed: the CPU is the child's rusage).
python3 - "$BIN" "$W/queries.json" "$VISITS" "$@" <<'EOF'
import json, re, resource, subprocess, sys, time
binary, queries, visits, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
n = sum(1 for _ in open(queries))
t0 = time.monotonic()
with open(queries) as qin:
    p = subprocess.run([binary, "analysis", *args], stdin=qin, capture_output=True, text=True)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
answers = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
m = re.search(r"(\d+) evaluations in (\d+) batches \(mean batch ([\d.]+)\)", p.stderr)
if p.returncode != 0 or not m:
    sys.exit(f"bench_analysis: sente analysis exited {p.returncode}: {p.stderr[-2000:]}")
print(json.dumps({"bench": "analysis", "queries": n,
                  "answered": sum(1 for a in answers if "turnNumber" in a),
                  "errors": sum(1 for a in answers if "error" in a), "visits": visits,
                  "evaluations": int(m.group(1)), "batches": int(m.group(2)),
                  "mean_batch": float(m.group(3)), "wall_s": round(wall, 1),
                  "cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
                  "load": " ".join(open("/proc/loadavg").read().split()[:3])},
                 separators=(",", ":")))
EOF
