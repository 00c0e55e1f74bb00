#!/usr/bin/env bash
# The bench on a bare x86-64 Linux machine (no Node.js, no network, no PostgreSQL; root), from
# the bundle bench/bare-machine/pack.sh wrote into .bare-machine/. See docs/benchmarks.md,
# "On a bare lent machine". From the checkout's root:
#
#   BENCH_ARGS='--quick --scenario code_exchange' bash bench/bare-machine/run.sh
#
# Environment (all optional):
#   OUT          where the results go (the device tool sets it; default /tmp/bare-out)
#   BENCH_ARGS, BENCH_ARGS2, BENCH_ARGS3
#                up to three runs of bench/run.ts, in turn, word-split (no quoting). Each gets
#                --out, and --postgres to the PostgreSQL started here unless it names --postgres
#                or --no-postgres (--no-postgres where PostgreSQL did not start). None: set up only
#   BENCH_CPUS   CPUs the bench runs on (taskset -c): default 12-15 with 16 CPUs or more, else
#                none; servers inherit them unless the arguments name --server-cpus
#   PG_CPUS      CPUs PostgreSQL runs on (default: any)
#   PGPORT       PostgreSQL's port on 127.0.0.1 (default 5432)
#   DEADLINE_S   seconds after this script's start at which a running bench is stopped and no
#                other starts (default 540, so that a run tool call of 600 s still packs results)
#   PG_USER      who PostgreSQL runs as (it refuses root): default postgres, else nobody
#   BUNDLE, WORK the bundle (default .bare-machine) and a scratch folder (default /tmp/bare);
#                --against's checkout is always /tmp/before
#
# $OUT gets device.log (everything), benchN.log (each run), results.tar.gz (bench-N/: each run's
# --out folder, latest.md, latest.json, logs/, scale-*.svg; postgres/: its log and settings;
# MANIFEST.txt), and with --cpu-prof profiles.tar.gz: 6 files at most of the 8 that come back.

set -u -o pipefail
umask 022

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/bare-out}
BUNDLE=${BUNDLE:-$ROOT/.bare-machine}
WORK=${WORK:-/tmp/bare}
BEFORE=/tmp/before
PGPORT=${PGPORT:-5432}
PG_CPUS=${PG_CPUS:-}
DEADLINE_S=${DEADLINE_S:-540}
if [ "$(nproc)" -ge 16 ]; then BENCH_CPUS=${BENCH_CPUS-12-15}; else BENCH_CPUS=${BENCH_CPUS-}; fi
NODE_DIR=$WORK/node
PG_PREFIX=$WORK/pg
PG_DATA=$WORK/pgdata
PG_RUN=$WORK/pgrun # log, socket and HOME of the PostgreSQL user
RESULTS=$WORK/results
PG_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres"

T_START=$(date +%s)
elapsed() { echo $(($(date +%s) - T_START)); }
step() { printf '\n===== [%ss] %s\n' "$(elapsed)" "$*"; }
warn() { printf '!!!!! WARNING: %s\n' "$*"; }
die() { printf '\n!!!!! FATAL [%ss]: %s\n' "$(elapsed)" "$*"; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# xz -dc, or Python's lzma where xz is not installed (a CUDA image has Python).
unxz() {
  if xz --version >/dev/null 2>&1; then xz -dc -- "$1"; return; fi
  local py
  for py in python3 /usr/bin/python3; do
    if have "$py" && "$py" -c 'import lzma' 2>/dev/null; then
      "$py" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer, 1 << 20)' "$1"
      return
    fi
  done
  echo "no xz and no python3 with lzma: cannot unpack $1" >&2
  return 1
}

# --- PostgreSQL, as a user that is not root.
PG_OK=0
PGBIN=
PGLIB=$PG_PREFIX/lib
as_pg() { "$@"; }
pick_pg_user() {
  if [ "$(id -u)" != 0 ]; then PG_USER=$(id -un); return 0; fi
  local u chosen=
  for u in ${PG_USER:-} postgres nobody; do
    if id -u "$u" >/dev/null 2>&1 && [ "$(id -u "$u")" != 0 ]; then chosen=$u; break; fi
  done
  if [ -z "$chosen" ]; then
    useradd -r -M -d /tmp -s /bin/sh tesspg 2>/dev/null || adduser --system --no-create-home tesspg >/dev/null 2>&1
    id -u tesspg >/dev/null 2>&1 || { echo "no user but root to run PostgreSQL as"; return 1; }
    chosen=tesspg
  fi
  PG_USER=$chosen
  local uid gid
  uid=$(id -u "$PG_USER") gid=$(id -g "$PG_USER")
  if have setpriv && setpriv --reuid="$uid" --regid="$gid" --clear-groups -- true 2>/dev/null; then
    eval "as_pg() { setpriv --reuid=$uid --regid=$gid --clear-groups -- \"\$@\"; }"
  elif have runuser && runuser -u "$PG_USER" -- true 2>/dev/null; then
    eval "as_pg() { runuser -u $PG_USER -- \"\$@\"; }"
  elif have su && su -s /bin/sh "$PG_USER" -c true 2>/dev/null; then
    eval "as_pg() { su -s /bin/sh $PG_USER -c \"\$(printf '%q ' \"\$@\")\"; }"
  else
    echo "cannot run as $PG_USER: no setpriv, runuser or su that works"
    return 1
  fi
  echo "PostgreSQL runs as $PG_USER ($uid:$gid)"
}
pg() { (cd / && as_pg env LD_LIBRARY_PATH="$PGLIB" TZ=UTC LC_ALL=C LANG=C HOME="$PG_RUN" "$@"); }
stop_postgres() {
  if [ -n "$PGBIN" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    pg "$PGBIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      pg "$PGBIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
}

setup_postgres() {
  [ -f "$BUNDLE/pg.tar.xz" ] || { echo "no $BUNDLE/pg.tar.xz"; return 1; }
  pick_pg_user || return 1
  # A call stopped at the tool's limit leaves its PostgreSQL running (a daemon outlives the call).
  local old
  old=$(head -1 "$PG_DATA/postmaster.pid" 2>/dev/null)
  if [ -n "$old" ] && kill -INT "$old" 2>/dev/null; then
    echo "stopping the PostgreSQL an earlier call left ($old)"
    for _ in $(seq 1 30); do kill -0 "$old" 2>/dev/null || break; sleep 1; done
  fi
  rm -rf "$PG_PREFIX" "$PG_DATA" "$PG_RUN"
  mkdir -p "$PG_PREFIX" "$PG_DATA" "$PG_RUN" || return 1
  unxz "$BUNDLE/pg.tar.xz" | tar -xf - -C "$PG_PREFIX" || { echo "unpacking pg.tar.xz failed"; return 1; }
  cat "$PG_PREFIX/MANIFEST.txt"
  PGBIN=$(echo "$PG_PREFIX"/usr/lib/postgresql/*/bin)
  [ -x "$PGBIN/postgres" ] || { echo "no postgres in pg.tar.xz"; return 1; }

  # Debian's PostgreSQL reads time zones from /usr/share/zoneinfo (compiled in); an image
  # without tzdata gets the dev machine's.
  if [ ! -e /usr/share/zoneinfo/UTC ]; then
    echo "no /usr/share/zoneinfo/UTC: copying the bundle's there"
    mkdir -p /usr/share/zoneinfo && cp -a -n "$PG_PREFIX/zoneinfo/." /usr/share/zoneinfo/ || return 1
  fi
  # Every library but glibc's should come from the bundle.
  local libs outside
  libs=$(LD_LIBRARY_PATH=$PGLIB ldd "$PGBIN/postgres" "$PGBIN/initdb")
  if grep 'not found' <<<"$libs"; then echo "a library is missing"; return 1; fi
  outside=$(awk -v lib="$PGLIB/" '$2 == "=>" && index($3, lib) != 1 { print $1 }' <<<"$libs" | sort -u)
  echo "libraries from the machine: ${outside//$'\n'/ }"
  if grep -vqE '^(libc|libm|libdl|libpthread|librt|libresolv)\.so' <<<"$outside"; then
    warn "a library other than glibc's comes from the machine"
  fi
  LD_LIBRARY_PATH=$PGLIB "$PGBIN/postgres" --version || return 1

  chown "$PG_USER" "$PG_DATA" "$PG_RUN" && chmod 700 "$PG_DATA" || return 1
  pg "$PGBIN/initdb" -D "$PG_DATA" -U postgres --auth=trust --locale=C --encoding=UTF8 --no-sync >"$PG_RUN/initdb.log" 2>&1 ||
    { tail -20 "$PG_RUN/initdb.log"; echo "initdb failed"; return 1; }
  local dsm=posix
  [ -w /dev/shm ] || dsm=mmap
  cat >>"$PG_DATA/postgresql.conf" <<EOF

# --- bench/bare-machine/run.sh
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$PG_RUN'
max_connections = 300
shared_buffers = 1GB
timezone = 'UTC'
log_timezone = 'UTC'
jit = off
dynamic_shared_memory_type = $dsm
EOF
  local pin=()
  if [ -n "$PG_CPUS" ]; then
    if have taskset; then pin=(taskset -c "$PG_CPUS"); echo "PostgreSQL on CPUs $PG_CPUS"; else warn "PG_CPUS set but no taskset"; fi
  fi
  pg ${pin[@]+"${pin[@]}"} "$PGBIN/pg_ctl" -D "$PG_DATA" -l "$PG_RUN/postgres.log" -w -t 90 start ||
    { tail -30 "$PG_RUN/postgres.log"; echo "pg_ctl start failed"; return 1; }

  # Connect as the bench will: node's pg, over TCP.
  local _
  for _ in $(seq 1 20); do
    if node -e '
      const c = new (require("pg").Client)({ connectionString: process.argv[1], connectionTimeoutMillis: 2000 });
      c.connect()
        .then(() => c.query("SELECT version() AS v, current_setting($$shared_buffers$$) AS sb"))
        .then((r) => { console.log(`${r.rows[0].v}, shared_buffers ${r.rows[0].sb}`); return c.end(); })
        .then(() => process.exit(0), (e) => { console.error(String(e)); process.exit(1); });
    ' "$PG_URL" 2>"$PG_RUN/probe.err"; then
      PG_OK=1
      return 0
    fi
    sleep 1
  done
  echo "PostgreSQL does not answer at $PG_URL: $(cat "$PG_RUN/probe.err")"
  return 1
}

# One run of bench/run.ts: $1 its arguments, $2 its number.
run_bench() {
  local args extra=() pin=() a has_pg=0 has_server_cpus=0 out=$RESULTS/bench-$2 log=$OUT/bench$2.log
  read -r -a args <<<"$1" # split on blanks, no globbing
  for a in "${args[@]}"; do
    case $a in
      --postgres | --postgres=* | --no-postgres) has_pg=1 ;;
      --server-cpus | --server-cpus=*) has_server_cpus=1 ;;
    esac
  done
  if [ $has_pg = 0 ]; then
    if [ $PG_OK = 1 ]; then extra+=(--postgres "$PG_URL"); else extra+=(--no-postgres); fi
  fi
  extra+=(--out "$out")
  if [ -n "$BENCH_CPUS" ]; then
    if have taskset; then
      pin=(taskset -c "$BENCH_CPUS")
      [ $has_server_cpus = 1 ] || warn "no --server-cpus: the servers share the bench's CPUs $BENCH_CPUS"
    else
      warn "no taskset: the bench runs on any CPU"
    fi
  fi
  local left=$((DEADLINE_S - $(elapsed)))
  if [ $left -lt 30 ]; then warn "not run, $left s before the deadline: $1"; return 1; fi
  step "BENCH $2 (at most $left s): ${pin[*]+${pin[*]} }node bench/run.ts ${args[*]} ${extra[*]}"
  local t0 rc
  t0=$(date +%s)
  # timeout signals its whole process group: the servers the bench started stop with it.
  (cd "$ROOT" && timeout -s INT -k 15 "$left" ${pin[@]+"${pin[@]}"} \
    node --disable-warning=ExperimentalWarning bench/run.ts "${args[@]}" "${extra[@]}") 2>&1 | tee "$log"
  rc=$?
  step "BENCH $2 EXITED $rc after $(($(date +%s) - t0)) s"
  return $rc
}

main() {
  trap stop_postgres EXIT # pg_ctl's server is a daemon: it would outlive the call
  step "MACHINE"
  echo "$(date -u +%FT%TZ), user $(id -un 2>/dev/null || id -u), $ROOT, $(nproc) CPUs, glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2), kernel $(uname -r)"
  grep -m1 'model name' /proc/cpuinfo
  grep -E 'MemTotal|MemAvailable' /proc/meminfo
  grep PRETTY_NAME /etc/os-release 2>/dev/null
  local t
  for t in xz python3 taskset setpriv runuser timeout tar gzip git; do printf '  %-8s %s\n' "$t" "$(command -v "$t" || echo MISSING)"; done
  [ -f "$ROOT/bench/run.ts" ] || die "no bench/run.ts in $ROOT"
  # Unpacking over links would write into another checkout (a dev machine's worktree).
  for t in node_modules bench/node_modules; do [ ! -L "$ROOT/$t" ] || die "$ROOT/$t is a link: run me in a checkout of its own"; done

  step "BUNDLE $BUNDLE"
  ls -l "$BUNDLE" || die "no bundle: run bench/bare-machine/pack.sh, and carry .bare-machine"
  cat "$BUNDLE/MANIFEST.txt"
  echo "this tree: $(git -C "$ROOT" describe --always --dirty --abbrev=7 2>/dev/null || echo 'no git')"
  local lock
  lock=$(sha256sum <"$ROOT/package-lock.json" | cut -d' ' -f1)
  grep -q "package-lock.json sha256 $lock" "$BUNDLE/MANIFEST.txt" ||
    warn "package-lock.json is not the one the bundle's node_modules were packed with"

  step "NODE -> $NODE_DIR/node"
  # Beside, then renamed: a node still running from an earlier call keeps its file.
  mkdir -p "$NODE_DIR" && unxz "$BUNDLE/node.xz" >"$NODE_DIR/node.new" && chmod 755 "$NODE_DIR/node.new" &&
    mv -f "$NODE_DIR/node.new" "$NODE_DIR/node" || die "unpacking node.xz failed"
  export PATH="$NODE_DIR:$PATH"
  [ "$(command -v node)" = "$NODE_DIR/node" ] || die "node is $(command -v node), not $NODE_DIR/node"
  node -p '`node ${process.version} at ${process.execPath}`' || die "node does not run"

  step "NODE_MODULES (nm.tar.xz)"
  unxz "$BUNDLE/nm.tar.xz" | tar -xf - -C "$ROOT" || die "unpacking nm.tar.xz failed"
  echo "node_modules: $(ls "$ROOT/node_modules" | wc -l) entries, bench/node_modules: $(ls "$ROOT/bench/node_modules" | wc -l)"

  step "POSTGRESQL ($PG_PREFIX, data $PG_DATA, 127.0.0.1:$PGPORT)"
  if setup_postgres; then
    echo "PostgreSQL ready"
  else
    PG_OK=0
    warn "PostgreSQL did not start: the bench runs with --no-postgres"
    [ -f "$PG_RUN/postgres.log" ] && tail -50 "$PG_RUN/postgres.log"
  fi

  # Node's compile cache keeps src/ with its types stripped: servers then start without the
  # type stripper (docs/benchmarks.md, "Peak RSS"), as after an npm install.
  step "COMPILE CACHE"
  (cd "$ROOT" && node bin/warm-compile-cache.js) || warn "warm-compile-cache.js exited $?"
  if [ -f "$BUNDLE/before.tar.xz" ]; then
    step "BEFORE -> $BEFORE (for --against $BEFORE)"
    rm -rf "$BEFORE" && mkdir -p "$BEFORE" && unxz "$BUNDLE/before.tar.xz" | tar -xf - -C "$BEFORE" || die "unpacking before.tar.xz failed"
    ln -s "$ROOT/node_modules" "$BEFORE/node_modules"
    [ ! -f "$BEFORE/bin/warm-compile-cache.js" ] || (cd "$BEFORE" && node bin/warm-compile-cache.js) || warn "its warm-compile-cache.js exited $?"
  elif [[ "${BENCH_ARGS:-} ${BENCH_ARGS2:-} ${BENCH_ARGS3:-}" == *"$BEFORE"* ]]; then
    warn "the arguments name $BEFORE but the bundle has no before.tar.xz (pack.sh --against REF)"
  fi
  step "SET UP in $(elapsed) s"

  rm -rf "$RESULTS" && mkdir -p "$RESULTS"
  local rc=0 n=0 args
  for args in "${BENCH_ARGS:-}" "${BENCH_ARGS2:-}" "${BENCH_ARGS3:-}"; do
    n=$((n + 1))
    [ -n "$args" ] || continue
    run_bench "$args" $n || rc=$?
  done
  [ -n "${BENCH_ARGS:-}${BENCH_ARGS2:-}${BENCH_ARGS3:-}" ] || echo "no BENCH_ARGS: set up only"

  step "RESULTS -> $OUT"
  stop_postgres
  mkdir -p "$RESULTS/postgres"
  cp "$BUNDLE/MANIFEST.txt" "$RESULTS/"
  for t in "$PG_RUN/postgres.log" "$PG_RUN/initdb.log" "$PG_DATA/postgresql.conf"; do [ -f "$t" ] && cp "$t" "$RESULTS/postgres/"; done
  (cd "$RESULTS" && tar -czf "$OUT/results.tar.gz" --exclude='./bench-*/profiles' .)
  if compgen -G "$RESULTS/bench-*/profiles" >/dev/null; then
    (cd "$RESULTS" && tar -czf "$OUT/profiles.tar.gz" bench-*/profiles)
    [ "$(stat -c %s "$OUT/profiles.tar.gz")" -le $((16 * 1024 * 1024)) ] || warn "profiles.tar.gz is over 16 MiB: it will not come back"
  fi
  ls -l "$OUT"
  step "END: exit $rc after $(elapsed) s"
  return $rc
}

mkdir -p "$OUT" "$WORK" || { echo "cannot create $OUT or $WORK"; exit 1; }
main 2>&1 | tee "$OUT/device.log"
exit "${PIPESTATUS[0]}"
