#!/usr/bin/env bash
# Packs what the bench needs on a bare x86-64 Linux machine (no Node.js, no npm, no network, no
# PostgreSQL) into .bare-machine/ (git-ignored), for bench/bare-machine/run.sh there. See
# docs/benchmarks.md, "On a bare lent machine".
#
#   bench/bare-machine/pack.sh [--against REF]
#
# Run it in the checkout that travels (the device tool sends the checkout the session started in,
# whichever worktree calls it), on a dev machine: it reads this machine's Node.js
# (node_modules/node/bin/node), the installed packages, and Debian's PostgreSQL 15. Writes:
#   node.xz      the node binary
#   nm.tar.xz    node_modules/: the production dependencies and autocannon with theirs, plus
#                bench/node_modules/ (oidc-provider)
#   pg.tar.xz    PostgreSQL's postgres, initdb, pg_ctl, psql, its core modules and share/, every
#                library they load but glibc's, and /usr/share/zoneinfo
#   before.tar.xz  with --against: REF's src/, bin/, package.json and bench/*.ts and *.js (its
#                server script, bench/tessera-server.js since 1ca9e8e)
#   MANIFEST.txt what was packed, from which commit
# and fails if the bundle and the files that travel with it pass the device tool's 64 MiB.
#
# Environment: BUNDLE (the folder, default <checkout>/.bare-machine), XZ_THREADS (default 0: all
# cores; the node binary is one xz block at -9 either way), PG_MAJOR (default 15).
set -euo pipefail
umask 022

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUNDLE=${BUNDLE:-$ROOT/.bare-machine}
PG_MAJOR=${PG_MAJOR:-15}
XZ=(nice -n 10 xz -9 -T"${XZ_THREADS:-0}")
LIMIT=$((64 * 1024 * 1024)) # the device tool's limit on what travels: tree, carried paths
MARGIN=$((4 * 1024 * 1024)) # warned under: the tree grows with every commit

AGAINST=
while [ $# -gt 0 ]; do
  case $1 in
    --against) AGAINST=${2:?--against needs a git ref}; shift 2 ;;
    --against=*) AGAINST=${1#--against=}; shift ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "pack.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "pack.sh: $*" >&2; exit 1; }
T0=$(date +%s)
step() { printf '== [%ss] %s\n' "$(($(date +%s) - T0))" "$*"; }

cd "$ROOT"
[ -f bench/run.ts ] || die "$ROOT is not a Tessera checkout"
[ -e node_modules ] || die "no node_modules: run npm install first"
# A worktree's node_modules may be a link to another checkout's: npm query answers only
# where the packages really are.
NM_ROOT=$(dirname "$(realpath node_modules)")
NODE_SRC=$NM_ROOT/node_modules/node/bin/node
[ -x "$NODE_SRC" ] || die "no $NODE_SRC (package.json's devDependency node): run npm install"
if ! cmp -s "$NM_ROOT/package-lock.json" package-lock.json; then
  echo "warning: $NM_ROOT/package-lock.json differs from this checkout's: the packages are $NM_ROOT's" >&2
fi
if [ ! -e bench/node_modules/oidc-provider ]; then
  step "npm install --prefix bench (bench/node_modules is missing)"
  npm install --prefix bench --no-audit --no-fund
fi
BENCH_NM=$(realpath bench/node_modules)
PG_DIR=/usr/lib/postgresql/$PG_MAJOR
[ -x "$PG_DIR/bin/postgres" ] || die "no PostgreSQL $PG_MAJOR in $PG_DIR (apt-get install postgresql-$PG_MAJOR)"
AGAINST_NOTE=none
if [ -n "$AGAINST" ]; then
  AGAINST_COMMIT=$(git rev-parse --verify --short "$AGAINST^{commit}") || die "--against $AGAINST: not a commit here"
  AGAINST_NOTE="$AGAINST ($AGAINST_COMMIT), unpacked to /tmp/before"
fi
mkdir -p "$BUNDLE"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# --- node.xz: xz -9 of 120 MiB takes a core a minute or two, so it is kept while the binary
# it was made from (its sha256 in node.sha256) is the same.
NODE_VERSION=$("$NODE_SRC" --version)
NODE_SHA=$(sha256sum "$NODE_SRC" | cut -d' ' -f1)
if [ -f "$BUNDLE/node.xz" ] && [ "$(cat "$BUNDLE/node.sha256" 2>/dev/null)" = "$NODE_SHA" ]; then
  step "node.xz: kept (Node.js $NODE_VERSION, unchanged)"
else
  step "node.xz: Node.js $NODE_VERSION from $NODE_SRC"
  rm -f "$BUNDLE/node.sha256"
  "${XZ[@]}" -c "$NODE_SRC" >"$BUNDLE/node.xz.tmp"
  mv -f "$BUNDLE/node.xz.tmp" "$BUNDLE/node.xz"
  echo "$NODE_SHA" >"$BUNDLE/node.sha256"
fi

# --- nm.tar.xz: what the servers import (the production dependencies) and what the bench
# does (autocannon, and oidc-provider under bench/), as installed here.
step "nm.tar.xz: node_modules from $NM_ROOT, bench/node_modules from $BENCH_NM"
(cd "$NM_ROOT" && npm query '.prod' >"$STAGE/prod.json" && npm query '#autocannon, #autocannon *' >"$STAGE/autocannon.json")
mapfile -t NM_PATHS < <("$NODE_SRC" -e '
  const fs = require("node:fs");
  const found = process.argv.slice(1).flatMap((file) => JSON.parse(fs.readFileSync(file, "utf8")));
  const paths = new Set(found.map((p) => p.location).filter((l) => l.startsWith("node_modules/")));
  console.log([...paths].sort().join("\n"));' "$STAGE/prod.json" "$STAGE/autocannon.json")
[ ${#NM_PATHS[@]} -gt 20 ] || die "npm query listed only ${#NM_PATHS[@]} packages in $NM_ROOT"
TAR=(tar --owner=0 --group=0 --numeric-owner --sort=name --exclude=.cache)
"${TAR[@]}" -cf "$STAGE/nm.tar" -C "$NM_ROOT" "${NM_PATHS[@]}"
"${TAR[@]}" -rf "$STAGE/nm.tar" -C "$(dirname "$BENCH_NM")" --transform='s,^node_modules,bench/node_modules,' node_modules
"${XZ[@]}" -c "$STAGE/nm.tar" >"$BUNDLE/nm.tar.xz"
echo "   ${#NM_PATHS[@]} packages, bench/node_modules: $(ls "$BENCH_NM" | wc -l) entries"

# --- pg.tar.xz: Debian's binaries keep their layout under a prefix (postgres finds share/ and
# lib/ relative to its own path); lib/ holds every library they load but glibc's, the machine's.
step "pg.tar.xz: PostgreSQL $PG_MAJOR from $PG_DIR"
P=$STAGE/pg
mkdir -p "$P/lib" "$P$PG_DIR/bin" "$P$PG_DIR/lib" "$P/usr/share/postgresql"
cp -a "$PG_DIR"/bin/{postgres,initdb,pg_ctl,psql} "$P$PG_DIR/bin/"
# The modules initdb and a plain server load; contrib's extensions are left out.
cp -a "$PG_DIR"/lib/{plpgsql,dict_snowball,pgoutput,libpqwalreceiver,*_and_*,euc2004_sjis2004}.so "$P$PG_DIR/lib/"
cp -a "/usr/share/postgresql/$PG_MAJOR" "$P/usr/share/postgresql/"
rm -rf "$P/usr/share/postgresql/$PG_MAJOR"/{man,contrib}
find "$P/usr/share/postgresql/$PG_MAJOR/extension" -type f ! -name 'plpgsql*' -delete
GLIBC='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|ld-linux-x86-64)\.so'
ldd "$P$PG_DIR"/bin/* "$P$PG_DIR"/lib/*.so | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    [[ $name =~ $GLIBC ]] || cp -L "$path" "$P/lib/$name"
  done
if ldd "$P$PG_DIR"/bin/* | grep -q 'not found'; then die "a library of PostgreSQL is not found here"; fi
# libicudata is 30 MiB of ICU data (7 MiB in xz), most of it for what PostgreSQL never opens
# here (a C-locale UTF8 database): locale display names, currencies, units, time zone names,
# break iterators, transliterators, codepage converters, and every collation tailoring but the
# root's. icupkg (icu-devtools) drops those and the rest goes back into a library of the same
# name and symbol: 5 MiB, 1 in xz. initdb still imports every ICU locale's collation (those
# fall back to the root order).
ICU_NOTE="libicudata as Debian ships it"
ICU_LIB=$(ldd "$PG_DIR/bin/postgres" | awk '$1 ~ /^libicudata\.so/ { print $1, $3 }')
if [ -n "$ICU_LIB" ] && command -v icupkg >/dev/null && command -v gcc >/dev/null; then
  read -r icu_name icu_path <<<"$ICU_LIB"
  read -r sym value size < <(readelf -sW "$icu_path" | awk '$8 ~ /^icudt[0-9]+_dat$/ { print $8, $2, $3; exit }')
  read -r sec_addr sec_off < <(readelf -SW "$icu_path" | sed -n 's/.*\] \.rodata  *PROGBITS  *\([0-9a-f]*\)  *\([0-9a-f]*\) .*/\1 \2/p')
  dat=${sym%_dat}l.dat # icupkg wants the package's own name: icudt72l.dat
  mkdir -p "$STAGE/icu/small"
  dd if="$icu_path" of="$STAGE/icu/$dat" bs=1M iflag=skip_bytes,count_bytes status=none \
    skip=$((0x$value - 0x$sec_addr + 0x$sec_off)) count=$((size))
  icupkg -l "$STAGE/icu/$dat" >"$STAGE/icu/list.txt"
  grep -E '^(curr|zone|lang|region|unit|rbnf|brkitr|translit|coll)/|\.(cnv|spp)$|^confusables\.cfu$|^unames\.icu$' "$STAGE/icu/list.txt" |
    grep -vxE 'coll/(res_index\.res|root\.res|ucadata\.icu)' >"$STAGE/icu/remove.txt"
  icupkg -r "$STAGE/icu/remove.txt" "$STAGE/icu/$dat" "$STAGE/icu/small/$dat"
  printf '\t.section .rodata\n\t.globl %s\n\t.type %s, @object\n\t.balign 16\n%s:\n\t.incbin "%s"\n\t.size %s, .-%s\n\t.section .note.GNU-stack,"",@progbits\n' \
    "$sym" "$sym" "$sym" "$STAGE/icu/small/$dat" "$sym" "$sym" >"$STAGE/icu/data.S"
  gcc -shared -nostdlib -Wl,-soname,"$icu_name" -o "$P/lib/$icu_name" "$STAGE/icu/data.S"
  ICU_NOTE="$icu_name rebuilt with icupkg: $(wc -l <"$STAGE/icu/remove.txt") of $(wc -l <"$STAGE/icu/list.txt") items removed (display names, currencies, units, zone names, break iterators, transliterators, converters, collation tailorings)"
elif [ -n "$ICU_LIB" ]; then
  echo "warning: no icupkg (apt-get install icu-devtools) or no gcc: libicudata is carried whole (6 MiB more in xz)" >&2
fi
# Debian's PostgreSQL reads time zones from /usr/share/zoneinfo, compiled in: run.sh copies
# these there where the machine has none.
cp -a /usr/share/zoneinfo "$P/zoneinfo"
PG_VERSION=$("$PG_DIR/bin/postgres" --version)
cat >"$P/MANIFEST.txt" <<EOF
$PG_VERSION from $(. /etc/os-release && echo "$PRETTY_NAME"); libraries from the dev machine, glibc's excluded
$ICU_NOTE
zoneinfo: /usr/share/zoneinfo
EOF
"${TAR[@]}" -cf "$STAGE/pg.tar" -C "$P" .
"${XZ[@]}" -c "$STAGE/pg.tar" >"$BUNDLE/pg.tar.xz"

# --- before.tar.xz: the checkout --against runs (its node_modules is a link to this one's).
rm -f "$BUNDLE/before.tar.xz"
if [ -n "$AGAINST" ]; then
  step "before.tar.xz: $AGAINST ($AGAINST_COMMIT)"
  git archive --format=tar "$AGAINST" -- src bin package.json ':(glob)bench/*.ts' ':(glob)bench/*.js' | "${XZ[@]}" -c >"$BUNDLE/before.tar.xz"
fi

# --- MANIFEST.txt, and the sizes against the limit.
HEAD_COMMIT=$(git describe --always --dirty --abbrev=7)
cat >"$BUNDLE/MANIFEST.txt" <<EOF
packed $(date -u +%FT%TZ) by bench/bare-machine/pack.sh at $HEAD_COMMIT on $(hostname)
node: $NODE_VERSION (sha256 $NODE_SHA)
node_modules: ${#NM_PATHS[@]} packages from $NM_ROOT; package-lock.json sha256 $(sha256sum <"$NM_ROOT/package-lock.json" | cut -d' ' -f1)
postgresql: $PG_VERSION; $ICU_NOTE
against: $AGAINST_NOTE
EOF

# What travels: the tracked and untracked-not-ignored files, shared/ where there is one, and
# the carried bundle.
tree_bytes=$({ git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null || true; } |
  awk '{ s += $1 } END { print s + 0 }')
shared_bytes=0
if [ -d shared ]; then shared_bytes=$(du -sb shared | cut -f1); fi
bundle_bytes=$(find "$BUNDLE" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
total=$((tree_bytes + shared_bytes + bundle_bytes))
mib() { awk -v b="$1" 'BEGIN { printf "%6.1f MiB", b / 1048576 }'; }
step "sizes"
for f in "$BUNDLE"/*; do printf '  %-32s %s\n' "${f#"$ROOT"/}" "$(mib "$(stat -c %s "$f")")"; done
printf '  %-32s %s\n' "tree (git ls-files -co)" "$(mib "$tree_bytes")"
[ "$shared_bytes" = 0 ] || printf '  %-32s %s\n' "shared/" "$(mib "$shared_bytes")"
printf '  %-32s %s of %s\n' "total" "$(mib "$total")" "$(mib "$LIMIT")"
{ echo "sizes (bytes): bundle $bundle_bytes, tree $tree_bytes, shared $shared_bytes, total $total of $LIMIT"; } >>"$BUNDLE/MANIFEST.txt"
if [ "$total" -gt "$LIMIT" ]; then
  die "over the device tool's 64 MiB by $(mib $((total - LIMIT))): the run would be refused. Drop --against, or ignore (.git/info/exclude) untracked files that need not travel"
elif [ $((LIMIT - total)) -lt "$MARGIN" ]; then
  echo "warning: only $(mib $((LIMIT - total))) under the limit" >&2
fi
step "done: $BUNDLE (carry \"${BUNDLE#"$ROOT"/}\")"
