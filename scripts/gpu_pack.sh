#!/bin/sh
# Packs the host libraries a GPU machine without package access lacks
# (oneDNN, SQLite, Criterion, zlib, cJSON, libmicrohttpd and what they load) into .gpu/ (ignored), to
# be carried there with the working tree; scripts/gpu_check.sh uses it.
#
# usage: scripts/gpu_pack.sh      (on the development machine, after make deps)
set -eu
out=.gpu
rm -rf "$out"
mkdir -p "$out/lib" "$out/include"
libs="libdnnl.so.2 libsqlite3.so.0 libcriterion.so.3 libz.so.1 libcjson.so.1 libmicrohttpd.so.12"
# The libraries and everything they load, but not the C runtime and the
# compiler's, which the other machine has (in versions its own programs need).
skip='^(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64|libgcc_s|libstdc\+\+|libgomp)\.so'
for l in $libs; do
	p=$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')
	[ -n "$p" ] || { echo "gpu_pack: $l not found (make deps)" >&2; exit 2; }
	cp -L "$p" "$out/lib/$l"
	ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
		echo "$name" | grep -Eq "$skip" || cp -L "$path" "$out/lib/$name"
	done
done
# Link-time names.
ln -s libdnnl.so.2 "$out/lib/libdnnl.so"
ln -s libsqlite3.so.0 "$out/lib/libsqlite3.so"
ln -s libcriterion.so.3 "$out/lib/libcriterion.so"
ln -s libz.so.1 "$out/lib/libz.so"
ln -s libcjson.so.1 "$out/lib/libcjson.so"
ln -s libmicrohttpd.so.12 "$out/lib/libmicrohttpd.so"
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h /usr/include/microhttpd.h "$out/include/"
# zlib.h includes zconf.h, which Debian keeps in the multiarch folder.
cp /usr/include/zlib.h "$out/include/"
cp "$(ls /usr/include/zconf.h /usr/include/*-linux-gnu/zconf.h 2>/dev/null | head -n 1)" "$out/include/"
cp /usr/include/dnnl*.h "$out/include/"
cp -r /usr/include/oneapi /usr/include/criterion /usr/include/cjson "$out/include/"
# Build tools an image may lack (the dashboard's assets go through xxd);
# gpu_check.sh puts them last on its PATH, so the machine's own come first.
mkdir -p "$out/bin"
for t in make xxd; do cp -L "$(command -v "$t")" "$out/bin/$t"; done
du -sh "$out"
