#!/bin/bash
# The layers' arrows go down only (HACKING.md, layout): a file may include
# the headers of its own folder and of the folders below it, never above,
# and inside a folder no module may use, directly or not, one that uses
# it back.  `make lint` runs this; it prints each include that
# runs back up and fails.
set -u
cd "$(dirname "$0")/../.."

# Each folder and the folders it may use.
declare -A may=(
	[nfq]=""
	[shield]=""
	[policy]="nfq"
	[gateway]="nfq policy shield"
	[daemon]="nfq policy shield gateway"
	[client]="nfq"
	[ctl]="policy"
)
bad=0

for dir in "${!may[@]}"; do
	for f in "$dir"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS= read -r inc; do
			up=${inc#../}
			up=${up%%/*}
			[[ " ${may[$dir]} " == *" $up "* ]] && continue
			echo "$f: includes ../$inc, above $dir/ (it may use: ${may[$dir]:-nothing})"
			bad=1
		done < <(sed -n 's|^#include "\(\.\./[^"]*\)"|\1|p' "$f" | sed 's|^\.\./||')
	done
done

# Inside each folder, modules (a NAME.c and its NAME.h) call one another
# one way only: NAME uses OTHER when NAME.c or NAME.h includes OTHER.h, and
# that graph has no cycle.
for dir in "${!may[@]}"; do
	edges=$(for f in "$dir"/*.[ch]; do
		[ -e "$f" ] || continue
		m=$(basename "${f%.*}")
		sed -n 's|^#include "\([a-z_0-9]*\)\.h"|\1|p' "$f" |
			while read -r inc; do
				[ "$inc" = "$m" ] || echo "$m $inc"
			done
	done | sort -u)
	[ -n "$edges" ] || continue
	if ! cycle=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$cycle" ]; then
		echo "$dir/: modules use each other: $(printf '%s' "$cycle" | tr '\n' ' ')"
		bad=1
	fi
done
[ "$bad" -eq 0 ] && echo "layers: every include goes down"
exit "$bad"
