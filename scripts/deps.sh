#!/bin/sh
# deps.sh: make sure the Debian packages sente builds and tests with are
# installed. As root it installs what is missing with apt-get; otherwise it
# prints the exact command to run and fails.
#
#   sh scripts/deps.sh            same as --ensure
#   sh scripts/deps.sh --ensure   install what is missing (root), else explain
#   sh scripts/deps.sh --check    only report; exit 1 when something is missing
#   sh scripts/deps.sh --list     print the package list
set -eu

# Build and test: compiler and make, the libraries we link, Criterion for the
# tests, clang (with its libFuzzer runtime) for the fuzz targets, GNU Go as
# a real GTP opponent in the client tests, Open MPI for the learner's
# data-parallel ranks (sente train under mpirun, and its test), and the two
# independent oracles the tests compare with: Leela Zero (the same weights
# must give its policy and winrate) and PyTorch for /usr/bin/python3 (the
# learner's loss, gradients and steps). cJSON (libcjson-dev) parses and
# writes the JSON lines of `sente analysis`, KataGo's analysis protocol.
PACKAGES="build-essential libsqlite3-dev libmicrohttpd-dev libcjson-dev xxd libdnnl-dev libcriterion-dev zlib1g-dev clang libclang-rt-14-dev gnugo libopenmpi-dev openmpi-bin leela-zero python3-torch chromium chromium-driver python3-selenium"

mode=${1:---ensure}
case "$mode" in
--list) echo $PACKAGES; exit 0 ;;
--check|--ensure) ;;
*) echo "usage: sh scripts/deps.sh [--ensure|--check|--list]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: dpkg-query not found: this script knows Debian and Ubuntu only." >&2
	echo "deps: install by hand: $PACKAGES" >&2
	exit 1
fi

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0

echo "deps: missing:$missing"
[ "$mode" = --check ] && exit 1

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ]; then
	echo "deps: installing with apt-get"
	sh -c "$cmd"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	echo "deps: installing with sudo apt-get"
	sudo sh -c "$cmd"
else
	echo "deps: run this as root, then try again:" >&2
	echo "    sudo sh -c '$cmd'" >&2
	exit 1
fi
