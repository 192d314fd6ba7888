#!/usr/bin/env bash
# image_fixture.sh WARDEN STORE RECIPE: the image RECIPE describes, built
# into the image store STORE (WARDEN_IMAGE_DIR) unless it is there
# already; prints its name.  Used by lib.sh's image_fixture and by
# bench/run.sh, so that an image is built once per checkout and shared by
# every test, by the release and ASan runs and by the benchmark.
#
# The name is the recipe's base name and a key: the first 12 hex digits
# of the sha256 of the recipe's bytes and of warden's build code
# (src/core/image_build.c, src/core/image.c), so a changed recipe or a
# changed build is built anew rather than served stale.  What the Debian
# mirror serves is not in the key: image.sh's same-digest check compares
# the installed package versions first and says when the mirror moved.
#
# One build at a time per recipe: an exclusive flock on STORE/.lock-BASE,
# held across the check and the build, so two tests never build the same
# image at once and the second finds the first's.  Older builds of the
# same recipe (other keys, or the stale digest) are removed afterwards
# unless in use.
#
# Exit status: 0; 77 when the Debian mirror is unreachable (printed on
# stderr); 1 on any other failure, with mmdebstrap's log's tail.
set -uo pipefail
warden=${1:?usage: image_fixture.sh WARDEN STORE RECIPE}
store=${2:?usage: image_fixture.sh WARDEN STORE RECIPE}
recipe=${3:?usage: image_fixture.sh WARDEN STORE RECIPE}
top=$(cd "$(dirname "$0")/../.." && pwd)
base=$(basename "$recipe" .recipe)
key=$(cat "$recipe" "$top/src/core/image_build.c" "$top/src/core/image.c" | sha256sum | cut -c1-12)
name=$base-$key
# the store: warden refuses one writable by others (its owner would
# choose the sandboxes' /usr)
mkdir -p "$(dirname "$store")"
mkdir -p -m 700 "$store"
export WARDEN_IMAGE_DIR=$store
exec 9>"$store/.lock-$base"
flock -x 9
# warden's commands run without descriptor 9: mmdebstrap fails (status
# 25, "mmdebstrap failed to run") with a stray descriptor of its caller
# open; the lock is this shell's
warden() { "$warden_bin" "$@" 9>&-; }
warden_bin=$warden
# WD_FIXTURE_STALE=HEX: the caller found the image named here to be
# older than the mirror (image.sh); rebuilt if the name still gives that
# digest, served as it is if another caller rebuilt it meanwhile
stale=${WD_FIXTURE_STALE:-}
have=$(warden image inspect "$name" --json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])' 2>/dev/null)
if [ -n "$have" ] && [ "$have" != "$stale" ]; then
	echo "$name"
	exit 0
fi
log=$store/.log-$base
t0=$(date +%s)
if ! warden image build "$name" -f "$recipe" --json >"$log.json" 2>"$log" </dev/null; then
	if grep -Eqi "apt-get update|failed to download|Temporary failure resolving|Could not resolve|unable to connect" "$log"; then
		echo "the Debian mirror is unreachable from here (not a warden failure):" >&2
		tail -3 "$log" >&2
		exit 77
	fi
	echo "image_fixture: warden image build $name -f $recipe failed:" >&2
	tail -20 "$log" >&2
	exit 1
fi
echo "# image_fixture: built $name in $(($(date +%s) - t0)) s ($store)" >&2
for n in $(ls "$store/names"); do
	case $n in
	"$base"-*) [ "$n" = "$name" ] || warden image rm "$n" >/dev/null 2>&1 || true ;;
	esac
done
now=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$log.json" 2>/dev/null)
if [ -n "$stale" ] && [ "$now" != "$stale" ]; then
	warden image rm "sha256:$stale" >/dev/null 2>&1
fi
echo "$name"
