#!/usr/bin/env bash
# scripts/benchmarks.sh: runs the benchmarks BENCHMARKS.md's tables come
# from, at the checked-out commit, on this machine.
#
# Usage:
#   scripts/benchmarks.sh [-o DIR] [STEP...]   every step, or the ones named
#   scripts/benchmarks.sh list                 the steps and their commands
#
# It builds feedd, starts a Redis and a PostgreSQL of its own on loopback
# (fsync on, initdb's defaults; as an unprivileged user when run as root),
# runs each step and writes DIR/STEP.N.out (stdout: the --json object or
# go test's output) and DIR/STEP.N.err for each of its commands, and
# DIR/machine.txt: the commit, go version, the CPU, and `uptime` around
# every command. DIR defaults to bench-results/COMMIT. The servers and
# their data are removed at the end, also on Ctrl-C.
#
# Installs nothing: it needs redis-server and PostgreSQL 15 (initdb,
# pg_ctl under FEED_PG_BIN, default /usr/lib/postgresql/15/bin), and
# mariadb-server for the import step, as scripts/test.sh installs them.
# The recovery step runs scripts/test.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
die() { printf 'benchmarks.sh: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'benchmarks.sh: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- steps
#
# One function per step; each runs its commands through `run`, with
# $FEEDD the binary, $R the Redis URL and $PG the PostgreSQL URL. A new
# benchmark is a new function and its name in STEPS (docs/benchmarking.md,
# "Running them all", lists them with the section each fills).

step_fanout() {
	run "$FEEDD" bench fanout --followers 100000 --runs 3 --redis-url "$R" --json
	run "$FEEDD" bench fanout --followers 100000 --runs 3 --redis-url "$R" --inbox-layout zset --json
}
step_fanout-1m() {
	run "$FEEDD" bench fanout --followers 1000000 --runs 1 --redis-url "$R" --json
}
step_fanout-stores() {
	run "$FEEDD" bench fanout --followers 100000 --runs 1 --json
	run "$FEEDD" bench fanout --followers 1000000 --runs 1 --json
	run "$FEEDD" bench fanout --followers 1000000 --runs 1 --database-url "$PG" --redis-url "$R" --json
	run go test -run '^$' -bench InboxDeliver -count 5 ./sqlite
}
step_read() {
	run "$FEEDD" bench read --runs 3 --json --max-reads 0 --max-writes 0
	run "$FEEDD" bench read --runs 3 --json --max-reads 0 --max-writes 0 --redis-url "$R"
	run "$FEEDD" bench read --runs 3 --json --max-reads 0 --max-writes 0 --database-url "$PG" --code-sender log --secret-file "$SECRET"
	run "$FEEDD" bench read --runs 3 --json --max-reads 0 --max-writes 0 --database-url "$PG" --redis-url "$R" --code-sender log --secret-file "$SECRET"
}
step_reposts() {
	run "$FEEDD" bench fanout --followers 100000 --runs 5 --json
	run "$FEEDD" bench fanout --followers 100000 --runs 5 --redis-url "$R" --json
	run "$FEEDD" bench read --posts 10 --repost-share 0.3 --runs 5 --json --max-reads 0 --max-writes 0
	run "$FEEDD" bench read --posts 10 --repost-share 0.3 --runs 5 --json --max-reads 0 --max-writes 0 --redis-url "$R"
	run "$FEEDD" bench rank --rank-reposts 3 --json
	run "$FEEDD" bench rank --rank-reposts 3 --rank-seed 2 --json
}
step_publish() {
	run "$FEEDD" bench publish --followers 1000000 --runs 3 --redis-url "$R" --json
	run "$FEEDD" bench publish --followers 1000000 --database-url "$PG" --redis-url "$R" --json
}
step_durability() {
	run "$FEEDD" bench publish --followers 1000 --publishes 100 --sqlite-synchronous FULL --json
	run "$FEEDD" bench publish --followers 1000 --publishes 100 --sqlite-synchronous NORMAL --json
}
step_memory() {
	run "$FEEDD" bench memory --runs 4 --redis-url "$R" --json
}
step_stream() {
	run "$FEEDD" bench stream --streams 10000 --publishes 50 --runs 3 --json
	run "$FEEDD" bench stream --streams 10000 --publishes 50 --redis-url "$R" --database-url "$PG" --json
	run "$FEEDD" bench stream --streams 10000 --publishes 50 --database-url "$PG" --json
}
step_mixed() {
	run "$FEEDD" bench mixed --rate 2000 --duration 60s --json
	run "$FEEDD" bench mixed --rate 2000 --duration 60s --redis-url "$R" --json
	run "$FEEDD" bench mixed --rate 2000 --duration 60s --runs 3 --database-url "$PG" --redis-url "$R" --json
	run "$FEEDD" bench mixed --rate 2000 --duration 60s --runs 3 --database-url "$PG" --redis-url "$R" --apart --json
}
step_freshness() {
	local i
	for i in 1s 100ms 20ms 10ms 5ms; do # 1, 10, 50, 100, 200 posts/s
		run "$FEEDD" bench stream --streams 100 --publishes 40 --interval "$i" --database-url "$PG" --redis-url "$R" --json
		run "$FEEDD" bench stream --streams 100 --publishes 40 --interval "$i" --database-url "$PG" --redis-url "$R" --apart --json
	done
	run "$FEEDD" bench stream --streams 100 --publishes 100 --interval 50ms --apart --trace-posts --log-level info --log-format json \
		--database-url "$PG" --redis-url "$R" --json
}
step_soak() {
	run "$FEEDD" bench mixed --apart --rate 500 --duration 30m --sample-every 30s --database-url "$PG" --redis-url "$R" --json
}
step_rank() {
	local seed
	run "$FEEDD" bench rank --runs 5 --json
	for seed in 2 3 4 5 6; do
		run "$FEEDD" bench rank --rank-seed "$seed" --json
	done
	run "$FEEDD" bench rank --runs 3 --database-url "$PG" --json
}
step_notify() {
	run "$FEEDD" bench notify --runs 6 --json
	run "$FEEDD" bench notify --runs 5 --database-url "$PG" --json
}
step_push() {
	run "$FEEDD" bench push --runs 5 --json
	run "$FEEDD" bench push --runs 5 --database-url "$PG" --json
}
step_writes() {
	run "$FEEDD" bench writes --runs 3 --json
	run "$FEEDD" bench writes --runs 3 --sqlite-synchronous NORMAL --json
}
step_micro() {
	run go test -run '^$' -bench . -count 5 ./sqlite ./redis ./feedtest ./http ./inmem ./rank .
	run go test -run '^$' -bench MutedWordsPage -benchtime 300x -count 5 ./cmd/feedd
}
step_server() {
	run "$FEEDD" bench server --runs 3 --json
	run "$FEEDD" bench server --runs 3 --database-url "$PG" --redis-url "$R" --json
}
step_comments() {
	run "$FEEDD" bench comments --runs 3 --json
	run "$FEEDD" bench comments --runs 3 --database-url "$PG" --json
}
step_capacity() {
	# The first command measures the per-operation costs; the others price
	# the simulation with them (its output: capacity.1.out).
	run "$FEEDD" bench capacity --users 20000 --warmup-days 5 --redis-url "$R" --database-url "$PG" --json
	local costs=$out/$step.1.out
	run "$FEEDD" bench capacity --sizes 100000,300000,1000000 --costs "$costs" --json
	run "$FEEDD" bench capacity --users 300000 --sweep 0,1000,3000,10000,30000,100000 --sweep-reads 0.25,1,4 --costs "$costs" --json
	run "$FEEDD" bench capacity --check --users 20000 --days 1 --warmup-days 0 --costs "$costs" --redis-url "$R" --database-url "$PG" --json
}
step_import() {
	# The tutorial's MySQL is a MariaDB of this run's own (start_mariadb).
	start_mariadb
	run "$FEEDD" bench import --users 100000 --follows 20 --mysql "$MY" --hmdp-redis "$R" --json
	run "$FEEDD" bench import --users 100000 --follows 20 --mysql "$MY" --hmdp-redis "$R" --database-url "$PG" --redis-url "$R" --json
}
step_media() {
	# The previews against nginx on the same files (Debian's nginx, as
	# scripts/test.sh installs it); then the same from a bucket of a
	# versitygw of this run's own (start_s3).
	run "$FEEDD" bench media --json
	start_s3
	run "$FEEDD" bench media --media-s3 "$S3" --media-s3-access-key bench --media-s3-secret-key-file "$S3_SECRET" --json
}
step_recovery() {
	run scripts/test.sh -v -count=1 -run 'TestRedisBreaker|TestEmbeddedRestartRescuesAtOnce' ./cmd/feedd
}

# Against the previous release ($RELEASE, built by release_feedd), side by
# side in one run: fan-out alternating the two binaries, five runs each;
# idle CPU of both at once; the upgrade's migration timed on data the
# release made.
step_release-fanout() {
	release_feedd
	local i
	for i in 1 2 3 4 5; do
		run "$RELEASE" bench fanout --followers 100000 --runs 1 --redis-url "$R" --json
		run "$FEEDD" bench fanout --followers 100000 --runs 1 --redis-url "$R" --json
	done
}
step_release-idle() {
	release_feedd
	run idle_cpu 120 "$RELEASE" "$FEEDD"
}
step_release-upgrade() {
	release_feedd
	run upgrade_time "$TMP/upgrade" --users 5000 --follows 20 --posts 10
	run upgrade_time "$PG" --users 5000 --follows 20 --posts 10
}

# The order they run in: cheap and short first, the soak last.
STEPS=(micro memory fanout fanout-stores fanout-1m read reposts publish durability stream freshness rank notify push writes comments server media import capacity mixed recovery release-idle release-fanout release-upgrade soak)

# release_feedd sets RELEASE to the previous release's feedd: the release
# and commit TestUpgradeFromRelease starts from (upgradeFrom in
# cmd/feedd/upgrade_test.go), built from that commit's tree (git archive)
# into the cache the test uses, once per machine.
release_feedd() {
	[[ -z ${RELEASE:-} ]] || return 0
	local version commit cache src
	read -r version commit < <(sed -n 's/^var upgradeFrom = .*{"\([^"]*\)", "\([0-9a-f]*\)"}$/\1 \2/p' cmd/feedd/upgrade_test.go)
	[[ -n $commit ]] || die "no upgradeFrom in cmd/feedd/upgrade_test.go"
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/feedd-test
	RELEASE=$cache/feedd-$version-$commit
	[[ -x $RELEASE ]] && return 0
	git cat-file -e "$commit^{commit}" || die "commit $commit of feedd $version is not in this checkout (git fetch --unshallow)"
	mkdir -p "$cache"
	src=$TMP/release-src
	mkdir -p "$src"
	git archive --format=tar "$commit" | tar -x -C "$src"
	log "building feedd $version at $commit"
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local go build -trimpath -o "$RELEASE.part.$$" ./cmd/feedd) ||
		die "could not build feedd $version"
	rm -rf "$src"
	mv "$RELEASE.part.$$" "$RELEASE"
}

# idle_cpu SECONDS BIN...: starts `BIN serve` of each BIN at once, each on
# an empty data directory of its own (the embedded default), lets them
# settle 10 s, then prints for each, as a JSON line, the CPU seconds it
# used (user + system, /proc/PID/stat) over SECONDS of wall time, and the
# machine's load at the end.
idle_cpu() {
	local secs=$1 bin i
	shift
	local pids=() before=() tick
	tick=$(getconf CLK_TCK)
	i=0
	for bin in "$@"; do
		i=$((i + 1))
		"$bin" serve --data "$TMP/idle$i" --addr 127.0.0.1:0 --admin-addr off --log-level warn </dev/null >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 10
	for i in "${!pids[@]}"; do
		before+=("$(awk '{print $14 + $15}' "/proc/${pids[$i]}/stat")")
	done
	sleep "$secs"
	for i in "${!pids[@]}"; do
		local after
		after=$(awk '{print $14 + $15}' "/proc/${pids[$i]}/stat")
		printf '{"binary":"%s","version":"%s","wall_s":%s,"cpu_s":%s,"core_percent":%s,"load":"%s"}\n' \
			"$(basename "${@:$((i + 1)):1}")" "$("${@:$((i + 1)):1}" version | awk '{print $2}')" "$secs" \
			"$(awk -v a="$after" -v b="${before[$i]}" -v t="$tick" 'BEGIN {printf "%.2f", (a - b) / t}')" \
			"$(awk -v a="$after" -v b="${before[$i]}" -v t="$tick" -v s="$secs" 'BEGIN {printf "%.3f", 100 * (a - b) / t / s}')" \
			"$(cut -d' ' -f1-3 /proc/loadavg)"
		kill "${pids[$i]}"
	done
	wait "${pids[@]}" || true # only these: the S3 server may run in the background too
}

# upgrade_time DB SEED_FLAGS...: the release seeds a database (DB: a
# directory for the embedded default, or a postgres:// URL, whose schema
# is emptied first), then this feedd's `feedd migrate` is timed on it;
# prints a JSON line with the rows of the seeded tables and the seconds
# the migration took.
upgrade_time() {
	local target=$1 db=() engine=sqlite count
	shift
	count='SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM posts) + (SELECT count(*) FROM follows) + (SELECT count(*) FROM likes)'
	if [[ $target == postgres://* ]]; then
		engine=postgres
		db=(--database-url "$target" --code-sender log --secret-file "$SECRET")
		"$PG_BIN/psql" "$target" -qc 'DROP SCHEMA public CASCADE; CREATE SCHEMA public' >/dev/null
	else
		rm -rf "$target"
		db=(--data "$target")
	fi
	"$RELEASE" seed "${db[@]}" "$@" >&2
	local t0 t1 rows
	t0=$(date +%s.%N)
	"$FEEDD" migrate "${db[@]}" >&2
	t1=$(date +%s.%N)
	if [[ $engine == postgres ]]; then
		rows=$("$PG_BIN/psql" "$target" -Atc "$count")
	else
		rows=$(sqlite3 "$target/feedd.db" "$count")
	fi
	printf '{"engine":"%s","rows":%s,"migrate_s":%s}\n' "$engine" "$rows" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')"
}

# start_s3 starts versitygw (built by scripts/test.sh into its cache) on
# loopback for the media step, and sets S3 to a bucket's URL and
# S3_SECRET to the file of its secret key.
start_s3() {
	[[ -z $S3 ]] || return 0
	local bin=${XDG_CACHE_HOME:-$HOME/.cache}/feedd-test/versitygw-v1.8.0/versitygw
	[[ -x $bin ]] || die "the media step needs versitygw (scripts/test.sh builds it into $(dirname "$bin"))"
	mkdir -p "$TMP/s3/meta" "$TMP/s3/data"
	local port
	port=$(free_port)
	ROOT_ACCESS_KEY=bench ROOT_SECRET_KEY=benchsecret "$bin" --port "127.0.0.1:$port" posix --sidecar "$TMP/s3/meta" "$TMP/s3/data" \
		</dev/null >"$TMP/s3.log" 2>&1 &
	S3_PID=$!
	for _ in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.1
	done
	S3=http://127.0.0.1:$port/feedd-bench
	S3_SECRET=$TMP/s3.secret
	echo benchsecret >"$S3_SECRET"
}

# start_mariadb starts a MariaDB on loopback for the import step (once; as
# PostgreSQL's user when run as root, as mariadbd refuses root), with a
# user feedd, and sets MY to its DSN. Durability off: the synthetic
# database it holds is made, read and dropped.
start_mariadb() {
	[[ -z $MY ]] || return 0
	command -v mariadb-install-db >/dev/null && [[ -x /usr/sbin/mariadbd ]] ||
		die "the import step needs mariadb-server (scripts/test.sh installs it)"
	MY_DIR=$TMP/mysql
	mkdir -p "$MY_DIR"
	[[ ${#PG_AS[@]} -eq 0 ]] || chown "$pguser:" "$MY_DIR"
	(cd "$MY_DIR" && "${PG_AS[@]}" mariadb-install-db --no-defaults --datadir="$MY_DIR/data" \
		--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve) >"$MY_DIR/install.log" 2>&1 ||
		{ cat "$MY_DIR/install.log" >&2; die "mariadb-install-db failed"; }
	local port
	port=$(free_port)
	(cd "$MY_DIR" && exec "${PG_AS[@]}" /usr/sbin/mariadbd --no-defaults --datadir="$MY_DIR/data" --socket="$MY_DIR/mysqld.sock" \
		--port="$port" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$MY_DIR/mysqld.pid" \
		--log-error="$MY_DIR/error.log" --tmpdir="$MY_DIR" --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
		--innodb-doublewrite=0 --innodb-buffer-pool-size=1G --character-set-server=utf8mb4 \
		--collation-server=utf8mb4_general_ci) </dev/null >/dev/null 2>&1 &
	for _ in $(seq 300); do
		if mariadb-admin --no-defaults --socket="$MY_DIR/mysqld.sock" -u root ping >/dev/null 2>&1; then
			mariadb --no-defaults --socket="$MY_DIR/mysqld.sock" -u root \
				-e "CREATE USER 'feedd'@'127.0.0.1'; GRANT ALL ON *.* TO 'feedd'@'127.0.0.1'" ||
				die "could not create the MariaDB user feedd"
			MY="feedd@tcp(127.0.0.1:$port)/"
			return 0
		fi
		sleep 0.1
	done
	die "MariaDB did not start: $(tail -n 3 "$MY_DIR/error.log" 2>/dev/null)"
}

# ---------------------------------------------------------------- running

out=""
if [[ ${1:-} == -o ]]; then
	out=$2
	shift 2
fi
if [[ ${1:-} == list ]]; then
	for s in "${STEPS[@]}"; do
		printf '%s:\n' "$s"
		declare -f "step_$s" | sed -n 's/^ *run \([^;]*\);\{0,1\}$/  \1/p'
	done
	exit 0
fi
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=("${STEPS[@]}")
for s in "${want[@]}"; do
	declare -F "step_$s" >/dev/null || die "no step $s (scripts/benchmarks.sh list)"
done

command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"
commit=$(git rev-parse HEAD)
[[ -z $(git status --porcelain --untracked-files=no) ]] || log "warning: the tree has changes not committed; figures are of $commit plus them"
out=${out:-bench-results/$commit}
mkdir -p "$out"
out=$(cd "$out" && pwd)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/feedd-bench.XXXXXX")
REDIS_PID="" PG_DATA="" PG_AS=() MY_DIR="" MY="" S3="" S3_PID=""
cleanup() {
	set +e
	[[ -n $MY_DIR && -f $MY_DIR/mysqld.pid ]] && kill "$(head -n1 "$MY_DIR/mysqld.pid")" 2>/dev/null && sleep 2
	[[ -n $REDIS_PID ]] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
	[[ -n $S3_PID ]] && kill "$S3_PID" 2>/dev/null && wait "$S3_PID" 2>/dev/null
	[[ -n $PG_DATA ]] && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1
	rm -rf -- "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

FEEDD=$TMP/feedd
log "building feedd at $commit"
go build -o "$FEEDD" ./cmd/feedd

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$TMP" --daemonize no >"$TMP/redis.log" 2>&1 &
REDIS_PID=$!
R=redis://127.0.0.1:$rport/0

PG_BIN=${FEED_PG_BIN:-/usr/lib/postgresql/15/bin}
[[ -x $PG_BIN/initdb ]] || die "no PostgreSQL in $PG_BIN (scripts/test.sh installs it)"
PG_DATA=$TMP/pg
pguser=$(id -un)
if [[ $EUID -eq 0 ]]; then
	pguser=postgres
	id -u "$pguser" >/dev/null 2>&1 || pguser=feeddtest
	id -u "$pguser" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser"
	PG_AS=(runuser -u "$pguser" --)
	chmod 0711 "$TMP"
	mkdir -p "$PG_DATA" && chown "$pguser:" "$PG_DATA"
fi
(cd "$TMP" && "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U "$pguser" --auth=trust --no-instructions) >"$TMP/initdb.log" 2>&1 ||
	{ cat "$TMP/initdb.log" >&2; die "initdb failed"; }
pport=$(free_port)
(cd "$TMP" && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/log" -w \
	-o "-p $pport -c listen_addresses=127.0.0.1 -k $PG_DATA -c max_connections=300" start) >/dev/null ||
	die "PostgreSQL did not start"
PG="postgres://$pguser@127.0.0.1:$pport/postgres?sslmode=disable"
SECRET=$TMP/secret
openssl rand -hex 32 >"$SECRET" 2>/dev/null || head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$SECRET"
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

{
	echo "commit $commit"
	go version
	uname -srm
	grep -m1 'model name' /proc/cpuinfo || true
	echo "cores $(nproc), memory $(free -g | awk '/Mem:/ {print $2}') GiB"
	redis-server --version
	"$PG_BIN/postgres" --version
} >"$out/machine.txt"

n=0
step=""
# run CMD...: runs one command of the current step, its output in $out.
run() {
	n=$((n + 1))
	local base=$out/$step.$n
	printf '%s %s: %s\n' "$step.$n" "$(uptime | sed 's/.*load/load/')" "$*" >>"$out/machine.txt"
	log "$step.$n: $*"
	if ! "$@" >"$base.out" 2>"$base.err"; then
		log "$step.$n failed (exit $?), see $base.err"
	fi
	printf '%s done %s\n' "$step.$n" "$(uptime | sed 's/.*load/load/')" >>"$out/machine.txt"
}
for step in "${want[@]}"; do
	n=0
	"step_$step"
done
log "results in $out"
