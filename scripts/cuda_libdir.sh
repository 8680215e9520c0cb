#!/bin/sh
# Where the CUDA runtime library is under a toolkit, for the Makefile:
# prints two words, the library folder and the linker flag for libcudart.
#
#   lib64, then lib, then targets/<arch>-linux/lib: the first that holds a
#   libcudart.so (NVIDIA's installers use lib64, pip wheels and conda lib);
#   -lcudart when the unversioned link name is there, else
#   -l:libcudart.so.N for the highest versioned one (wheels carry only the
#   soname). Exit status 1, and nothing printed, when none is found.
#
# usage: sh scripts/cuda_libdir.sh CUDA_HOME
set -u
home=${1:?usage: cuda_libdir.sh CUDA_HOME}
for d in "$home/lib64" "$home/lib" "$home"/targets/*-linux/lib; do
	[ -d "$d" ] || continue
	if [ -e "$d/libcudart.so" ]; then
		echo "$d -lcudart"
		exit 0
	fi
	# The highest version: sort on the number after ".so.".
	v=$(ls "$d" 2>/dev/null | sed -n 's/^libcudart\.so\.\([0-9][0-9.]*\)$/\1/p' |
		sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
	if [ -n "$v" ]; then
		echo "$d -l:libcudart.so.$v"
		exit 0
	fi
done
exit 1
