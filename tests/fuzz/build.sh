#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Build the libFuzzer harness tests/fuzz/fuzz-check.c with clang, with
# AddressSanitizer and UBSan, into OUTDIR/fuzz-check:
#	tests/fuzz/build.sh OUTDIR
# The library is compiled here from its sources, instrumented for
# libFuzzer's coverage, apart from the autotools build (which uses gcc and
# must not change for this).  The sources are libtlog_a_SOURCES of
# Makefile.am, read at each build, so a file added there is fuzzed too;
# the libraries to link are LIB_LIBS of the configured Makefile (so run
# ./configure first).  Objects are built two at a time and kept in
# OUTDIR/obj: a second build recompiles only what changed.
# CC (default clang) and FUZZ_CFLAGS (extra flags) may be set.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: build.sh OUTDIR}
CC=${CC:-clang}
mkdir -p "$OUT/obj"
OUT=$(cd "$OUT" && pwd)
command -v "$CC" > /dev/null || { echo "build.sh: $CC is not installed"; exit 1; }
[ -f "$TOP/Makefile" ] || { echo "build.sh: run ./configure first (LIB_LIBS comes from the Makefile)"; exit 1; }

# libtlog_a_SOURCES: the words after "libtlog_a_SOURCES =" up to the end
# of its backslash-continued lines, the .c files only
sources=$(sed -n '/^libtlog_a_SOURCES[[:space:]]*=/,/[^\\]$/p' "$TOP/Makefile.am" |
	sed 's/^libtlog_a_SOURCES[[:space:]]*=//; s/\\$//' | tr -s ' \t' '\n\n' | grep '\.c$')
[ -n "$sources" ] || { echo "build.sh: no libtlog_a_SOURCES in Makefile.am"; exit 1; }
# makevar NAME: a variable of the configured Makefile, from its plain
# assignments only (running the Makefile itself could remake it)
sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$TOP/Makefile" |
	grep -E '^[A-Za-z_][A-Za-z0-9_]*[[:space:]]*=' > "$OUT/vars.mk"
makevar() {
	printf 'include %s\nprint-var:\n\t@echo $(%s)\n' "$OUT/vars.mk" "$1" |
		make -s --no-print-directory -f - print-var
}
libs=$(makevar LIB_LIBS)

cflags=(-std=c11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE -DHAVE_CONFIG_H
	-I"$TOP" -I"$TOP/kernel-shared" -I"$TOP/common"
	$(makevar LIB_CFLAGS)
	-fsanitize=address,undefined -fno-sanitize-recover=all
	-Wall -Wextra -Wno-unused-parameter ${FUZZ_CFLAGS:-})

# compile SRC: OUT/obj/NAME.o, unless it is newer than SRC and every header
compile() {
	local src="$1" obj
	obj="$OUT/obj/$(echo "$src" | tr '/' '_' | sed 's/\.c$/.o/')"
	if [ "$obj" -nt "$TOP/$src" ] && [ -z "$(find "$TOP/kernel-shared" "$TOP/common" \
			-name '*.h' -newer "$obj" -print -quit)" ]; then
		echo "$obj"
		return
	fi
	"$CC" "${cflags[@]}" "$2" -c "$TOP/$src" -o "$obj" >&2 || return 1
	echo "$obj"
}
export -f compile
export CC OUT TOP
export CFLAGS_LIST="${cflags[*]}"

objs=$(printf '%s\n' $sources | xargs -P 2 -I{} bash -c '
	cflags=($CFLAGS_LIST); compile "$1" -fsanitize=fuzzer-no-link' _ {}) ||
	{ echo "build.sh: compiling the library failed"; exit 1; }
[ "$(echo "$objs" | wc -l)" = "$(echo "$sources" | wc -l)" ] ||
	{ echo "build.sh: an object is missing"; exit 1; }
# shellcheck disable=SC2086
"$CC" "${cflags[@]}" -fsanitize=fuzzer "$TOP/tests/fuzz/fuzz-check.c" $objs $libs -lpthread \
	-o "$OUT/fuzz-check"
echo "built $OUT/fuzz-check ($(echo "$sources" | wc -l) library sources)"
