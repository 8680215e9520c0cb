#!/bin/sh
# soak.sh: what a run promises when it is killed, checked the hard way.
# Starts a short `sente run` N times (default 20), kills it with SIGKILL at
# a random moment each time, and after every kill checks that
#   - the database's integrity check says ok,
#   - every game committed before the kill is still there,
#   - no two model rows share a file,
#   - every model file has the checksum it had when first seen registered,
# then resumes. A last clean session must end normally and pass the same
# checks. Not part of CI (it takes a few minutes); needs the sqlite3 tool.
#
#   sh scripts/soak.sh [N]        SENTE_BIN=path/to/sente to test another build
set -eu
n=${1:-20}
bin=${SENTE_BIN:-$(dirname "$0")/../bin/sente}
command -v sqlite3 >/dev/null || { echo "soak: needs sqlite3 (apt-get install sqlite3)" >&2; exit 2; }
[ -x "$bin" ] || { echo "soak: no sente binary at $bin (make first)" >&2; exit 2; }
dir=$(mktemp -d /tmp/sente-soak-XXXXXX)
db=$dir/sente.db
small="--blocks 1 --channels 8 --parallel-games 8 --visits 16 --cheap-visits 4 --positions 60
       --window 2000 --batch 32 --eval-visits 4 --eval-positions 1 -q"
fail() { echo "soak: FAIL after kill $k: $*" >&2; echo "soak: the run is kept in $dir" >&2; exit 1; }
q() { sqlite3 -batch -noheader "file:$db?mode=ro" "$1"; }

check() {
	[ -f "$db" ] || return 0
	[ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity check: $(q 'PRAGMA integrity_check')"
	if [ -s "$dir/games.before" ]; then
		q 'SELECT id FROM games ORDER BY id' > "$dir/games.after"
		missing=$(comm -23 "$dir/games.before" "$dir/games.after" | wc -l)
		[ "$missing" -eq 0 ] || fail "$missing committed games are gone"
	fi
	dup=$(q 'SELECT file FROM models GROUP BY file HAVING count(*) > 1')
	[ -z "$dup" ] || fail "model rows share a file: $dup"
	q 'SELECT id, file FROM models ORDER BY id' | while IFS='|' read -r id file; do
		case "$file" in /*) path=$file ;; *) path=$dir/${file#"$dir"/} ;; esac
		[ -f "$path" ] || path=$file
		[ -f "$path" ] || { echo "model $id: file $file missing" > "$dir/problem"; break; }
		sum=$(sha256sum "$path" | cut -d' ' -f1)
		old=$(awk -v id="$id" '$1 == id { print $2 }' "$dir/sums" 2>/dev/null)
		if [ -z "$old" ]; then
			echo "$id $sum" >> "$dir/sums"
		elif [ "$old" != "$sum" ]; then
			echo "model $id: $file changed since it was registered" > "$dir/problem"
			break
		fi
	done
	[ ! -f "$dir/problem" ] || fail "$(cat "$dir/problem")"
}

touch "$dir/sums"
kills=0
for k in $(seq 1 "$n"); do
	# shellcheck disable=SC2086
	"$bin" run --dir "$dir" --minutes 2 $small 2>>"$dir/log" &
	pid=$!
	# A moment between 0.2 and 12 s: during start-up, self-play, training,
	# export or measurement.
	ms=$(awk -v s="$(od -An -N2 -tu2 /dev/urandom)" 'BEGIN { print 200 + s % 11800 }')
	sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
	[ -f "$db" ] && q 'SELECT id FROM games ORDER BY id' > "$dir/games.before" 2>/dev/null || true
	kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
	wait "$pid" 2>/dev/null || true
	check
	printf 'soak: kill %2d at %5.1f s: %s games, %s models, ok\n' "$k" "$(echo "$ms" | awk '{print $1/1000}')" \
		"$(q 'SELECT count(*) FROM games' 2>/dev/null || echo 0)" "$(q 'SELECT count(*) FROM models' 2>/dev/null || echo 0)"
done
k=final
# shellcheck disable=SC2086
"$bin" run --dir "$dir" --minutes 0.2 $small 2>>"$dir/log" || fail "the clean session failed (see $dir/log)"
: > "$dir/games.before"
check
echo "soak: $kills kills, then a clean session: integrity ok, no committed game lost, no model file shared or changed ($(q 'SELECT count(*) FROM games') games, $(q 'SELECT count(*) FROM models') models)"
rm -rf "$dir"
