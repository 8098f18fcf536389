#!/usr/bin/env bash
# scripts/test.sh: the project's single test command (CI runs it through
# .ci/run as root on a fresh machine).
#
# Usage:
#   scripts/test.sh                        go mod tidy -diff, then go vet ./... && staticcheck ./...
#                                          alongside go test -race -count=1 -timeout 30m -skip '^TestBench'
#                                          ./cmd/feedd ./redis ./sqlite ./postgres ./... (the longest first),
#                                          then go test without -race (below)
#   scripts/test.sh -run TestX ./sqlite    arguments REPLACE ./... (of go test only):
#                                          ... go test -race -count=1 -timeout 30m -run TestX ./sqlite
#   (later flags win, e.g. scripts/test.sh -timeout 5m ./...)
# staticcheck is honnef.co/go/tools at the pinned $STATICCHECK_VERSION, run
# with go run (fetched through the Go module proxy, not in go.mod).
#
# It does all set-up itself, on loopback (127.0.0.1) only:
#   - installs redis-server with apt-get if redis-server/redis-cli are missing,
#     chromium (for the browser tests) if it is missing and FEED_CHROMIUM
#     names no other binary, sqlite3 (the stock shell) and systemd (for
#     systemd-analyze) if they are missing (and gcc, needed by -race, if there
#     is no C compiler), mariadb-server (the tutorial's MySQL, for the import
#     tests) if mariadbd is missing; PostgreSQL 15
#     binaries are expected in /usr/lib/postgresql/15/bin (override with
#     FEED_PG_BIN), postgresql-15 is apt-installed only as a fallback;
#   - makes one temp dir (mktemp -d) holding every data dir, socket and log;
#   - starts a throwaway PostgreSQL (initdb'ed as an unprivileged user when run
#     as root: `postgres` if it exists, else a system user `feeddtest`; trust
#     auth; fsync off), a throwaway MariaDB (as the same user, its root and a
#     user `feedd` without password, on loopback only), one Redis node and a
#     3-node Redis Cluster, each on free random ports below the ephemeral port
#     range;
#   - exports for the tests (see internal/testenv):
#       FEED_TEST_DATABASE_URL   postgres://USER@127.0.0.1:PORT/postgres?sslmode=disable (superuser)
#       FEED_TEST_REDIS_URL      redis://127.0.0.1:PORT/0
#       FEED_TEST_REDIS_CLUSTER  127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
#       FEED_TEST_MYSQL_DSN      feedd@tcp(127.0.0.1:PORT)/ (may create databases)
#       FEED_REDIS_SERVER_BIN    path of redis-server, for tests that run their own
#       FEED_TEST_OIDC_PROVIDER_BIN  the tests' OpenID provider (internal/testenv/oidcprovider, built here)
#       FEED_TEST_S3_URL         http://127.0.0.1:PORT, a real S3 server (versitygw), with
#       FEED_TEST_S3_ACCESS_KEY  its root credentials
#       FEED_TEST_S3_SECRET_KEY
#       FEED_S3_SERVER_BIN       path of versitygw, for tests that run their own
#       FEED_NGINX_BIN           path of nginx, for feedd bench media's test
#   versitygw is built with go install at $VERSITYGW_VERSION if missing, once,
#   into ${XDG_CACHE_HOME:-$HOME/.cache}/feedd-test/ (outside the work tree);
#   nginx is apt-installed if missing;
# go vet and go test run in their own session; whatever the tests leave running
# in it (e.g. a throwaway redis-server) is killed when go test ends. An EXIT
# trap stops every server it started (and a still running go test) and removes
# the temp dir, also when tests fail or the script is interrupted (INT/TERM/HUP).
# Concurrent runs are safe: separate temp dirs, random ports, and a server that
# loses a race for a port is restarted on another one.
#
# go test runs with -json; scripts/testsummary.go writes its events as go
# test writes without it (each package's line, the output of the tests that
# failed; every test's with -v), then the 10 slowest tests, and this script
# its wall time. FEED_TEST_JSON=FILE keeps both go tests' -json output in FILE
# (to see where the time goes).
#
# Without arguments, a second go test without -race follows: the randomized
# feed suites of the engines ($FULL_SIZE_SUITES) once more at full size
# (under -race their worlds are a fifth as large, at least 100 posts:
# feedtest.sized), and the end-to-end tests of feedd bench ($BENCH_TESTS),
# which the first go test skips.
#
# Exit status: go mod tidy -diff's if it fails (nothing else runs), go vet's
# or staticcheck's if one fails (go test is then stopped), else go test's.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
script_began=$SECONDS

log() { printf 'test.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

STATICCHECK_VERSION=v0.8.2 # honnef.co/go/tools; bump deliberately, with the fixes it asks for
VERSITYGW_VERSION=v1.8.0    # github.com/versity/versitygw: the S3 server of the media tests

TMP=""          # temp dir holding everything
GROUP_PIDS=()   # go vet / go test, each run in its own session (pgid == pid)
REDIS_PIDS=()   # redis-server processes (children of this shell)
S3_PID=""       # versitygw
PG_CTL=()       # command prefix to run pg_ctl as the PostgreSQL user
PG_DIR=""       # $TMP/pg once initdb ran
MYSQL_DIR=""    # $TMP/mysql once mariadb-install-db ran
USED_PORTS=()   # ports handed out by this run

# ---------------------------------------------------------------- clean-up

cleanup() {
	local rc=$?
	set +e
	trap '' INT TERM HUP # a second Ctrl-C must not cut the clean-up short
	local group
	for group in "${GROUP_PIDS[@]}"; do
		kill -TERM -- "-$group" 2>/dev/null || kill -TERM "$group" 2>/dev/null
	done
	for group in "${GROUP_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$group" 2>/dev/null
		wait "$group" 2>/dev/null
	done
	if [[ -n $PG_DIR && -f $PG_DIR/data/postmaster.pid ]]; then
		local pgpid
		pgpid=$(head -n1 "$PG_DIR/data/postmaster.pid" 2>/dev/null)
		(cd "$PG_DIR" && "${PG_CTL[@]}" -D "$PG_DIR/data" -m fast -w -t 30 stop) >/dev/null 2>&1
		if [[ $pgpid =~ ^[0-9]+$ ]] && kill -0 "$pgpid" 2>/dev/null; then
			kill -QUIT "$pgpid" 2>/dev/null
			sleep 1
			kill -KILL "$pgpid" 2>/dev/null
		fi
	fi
	if [[ -n $MYSQL_DIR && -f $MYSQL_DIR/mysqld.pid ]]; then
		local mypid
		mypid=$(head -n1 "$MYSQL_DIR/mysqld.pid" 2>/dev/null)
		if [[ $mypid =~ ^[0-9]+$ ]]; then
			kill -TERM "$mypid" 2>/dev/null
			for _ in $(seq 100); do kill -0 "$mypid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$mypid" 2>/dev/null
		fi
	fi
	if [[ -n $S3_PID ]]; then
		kill -TERM "$S3_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$S3_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$S3_PID" 2>/dev/null
		wait "$S3_PID" 2>/dev/null
	fi
	local pid
	for pid in "${REDIS_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null # with --save '' this is a shutdown nosave
	done
	for pid in "${REDIS_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	[[ -n $TMP && -d $TMP ]] && rm -rf -- "$TMP"
	exit "$rc"
}

on_signal() {
	log "interrupted by SIG$1, cleaning up"
	exit "$2"
}

# PostgreSQL's unix socket lives in here: keep the path short (max ~107 bytes).
tmp_base=${TMPDIR:-/tmp}
((${#tmp_base} <= 50)) || tmp_base=/tmp
TMP=$(mktemp -d "$tmp_base/feedd-test.XXXXXX")
trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# ---------------------------------------------------------------- tools

SUDO=()
if [[ $EUID -ne 0 ]] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
	SUDO=(sudo -n)
fi

apt_install() {
	command -v apt-get >/dev/null || die "apt-get not found; install $* by hand"
	[[ $EUID -eq 0 || ${#SUDO[@]} -gt 0 ]] || die "need root (or passwordless sudo) to apt-get install $*"
	log "installing $* with apt-get"
	local apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
		-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
	local try
	for try in $(seq 10); do # another apt may hold the lists lock
		"${apt[@]}" update >>"$TMP/apt.log" 2>&1 </dev/null && break
		[[ $try -eq 10 ]] && { tail -n 30 "$TMP/apt.log" >&2; die "apt-get update failed"; }
		sleep 10
	done
	"${apt[@]}" install --no-install-recommends "$@" >>"$TMP/apt.log" 2>&1 </dev/null ||
		{ tail -n 30 "$TMP/apt.log" >&2; die "apt-get install $* failed"; }
}

if ! command -v go >/dev/null; then
	[[ -x /usr/local/go/bin/go ]] || die "go not found on PATH nor in /usr/local/go/bin"
	export PATH="/usr/local/go/bin:$PATH"
fi
if [[ -z ${CC:-} ]] && ! command -v gcc >/dev/null && ! command -v clang >/dev/null; then
	apt_install gcc libc6-dev # go test -race needs cgo
fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	apt_install redis-server
fi
if ! command -v sqlite3 >/dev/null; then
	apt_install sqlite3 # the stock shell: what an operator can write (sqlite/migrate_test.go)
fi
if ! command -v systemd-analyze >/dev/null; then
	# systemd-analyze verify checks deploy/'s units (cmd/feedd/deploy_test.go);
	# it needs no running systemd, so this works in a container too.
	apt_install systemd
fi
REDIS_SERVER=$(command -v redis-server) || die "redis-server not found after install"
if [[ -z ${FEED_CHROMIUM:-} ]] && ! command -v chromium >/dev/null; then
	apt_install chromium fonts-dejavu-core # headless, for the browser tests (cmd/feedd/browser_test.go)
fi
if [[ ! -x /usr/sbin/mariadbd ]] || ! command -v mariadb-install-db >/dev/null || ! command -v mariadb >/dev/null; then
	apt_install mariadb-server # the tutorial's MySQL, for feedd import's tests (cmd/feedd/import_test.go)
fi
if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
	apt_install nginx # the baseline of feedd bench media (cmd/feedd/mediabench_test.go)
fi
NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
VERSITYGW=${XDG_CACHE_HOME:-$HOME/.cache}/feedd-test/versitygw-$VERSITYGW_VERSION/versitygw
if [[ ! -x $VERSITYGW ]]; then
	log "building versitygw $VERSITYGW_VERSION (once; cached in $(dirname "$VERSITYGW"))"
	mkdir -p "$(dirname "$VERSITYGW")"
	GOBIN="$(dirname "$VERSITYGW")" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" ||
		die "go install versitygw failed"
fi
PG_BIN=${FEED_PG_BIN:-/usr/lib/postgresql/15/bin}
if [[ ! -x $PG_BIN/initdb || ! -x $PG_BIN/pg_ctl || ! -x $PG_BIN/postgres ]]; then
	log "PostgreSQL binaries (initdb, pg_ctl, postgres) not found in $PG_BIN"
	apt_install postgresql-15
	[[ -x $PG_BIN/initdb ]] || die "PostgreSQL 15 binaries still missing in $PG_BIN"
fi

# ---------------------------------------------------------------- ports

# Random ports between 10000 and the start of the ephemeral range, so that
# outgoing connections never hold them.
PORT_MIN=10000
PORT_MAX=$(($(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - 1))
((PORT_MAX >= PORT_MIN + 1000)) || PORT_MAX=32767

port_free() {
	local p=$1 u
	for u in "${USED_PORTS[@]}"; do [[ $u == "$p" ]] && return 1; done
	if command -v ss >/dev/null; then
		[[ -z $(ss -Hltn "sport = :$p" 2>/dev/null) ]] || return 1
	fi
	! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
}

# pick_port: sets PORT to a free port and reserves it for this run.
pick_port() {
	local i
	for i in $(seq 500); do
		PORT=$((PORT_MIN + (RANDOM * 32768 + RANDOM) % (PORT_MAX - PORT_MIN + 1)))
		if port_free "$PORT"; then
			USED_PORTS+=("$PORT")
			return 0
		fi
	done
	die "no free port found"
}

# ---------------------------------------------------------------- Redis

REDIS_MAJOR=$("$REDIS_SERVER" --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')

# start_redis NAME PORT [ARGS...]: starts redis-server in $TMP/NAME; fails if
# it does not come up as ours on PORT (e.g. it lost the port to another run).
start_redis() {
	local name=$1 port=$2 dir=$TMP/$1
	shift 2
	mkdir -p "$dir"
	"$REDIS_SERVER" --bind 127.0.0.1 --port "$port" --daemonize no \
		--dir "$dir" --logfile "$dir/redis.log" \
		--save '' --appendonly no --databases 16 "$@" </dev/null >/dev/null 2>&1 &
	local pid=$!
	REDIS_PIDS+=("$pid")
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
			return 0
		fi
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	log "redis $name did not start on port $port: $(tail -n 3 "$dir/redis.log" 2>/dev/null | tr '\n' ' ')"
	return 1
}

# start_redis_retry NAME [ARGS...] (cluster: CLUSTER=1): sets PORT.
start_redis_retry() {
	local name=$1 try
	local -a extra
	shift
	for try in $(seq 5); do
		rm -rf "${TMP:?}/$name"
		pick_port
		local port=$PORT
		extra=()
		if [[ ${CLUSTER:-0} == 1 ]]; then
			extra=(--cluster-enabled yes --cluster-config-file "$TMP/$name/nodes.conf"
				--cluster-node-timeout 5000 --cluster-announce-ip 127.0.0.1)
			if ((REDIS_MAJOR >= 7)); then
				pick_port # separate cluster bus port
				extra+=(--cluster-port "$PORT")
			elif ! port_free $((port + 10000)); then
				continue
			else
				USED_PORTS+=($((port + 10000)))
			fi
		fi
		if start_redis "$name" "$port" "${extra[@]}" "$@"; then
			PORT=$port
			return 0
		fi
	done
	die "could not start redis $name"
}

# ---------------------------------------------------------------- PostgreSQL

start_postgres() {
	local user
	if [[ $EUID -eq 0 ]]; then # initdb and postgres refuse to run as root
		if id -u postgres >/dev/null 2>&1; then
			user=postgres
		else
			user=feeddtest
			id -u "$user" >/dev/null 2>&1 ||
				useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$user" 2>/dev/null ||
				id -u "$user" >/dev/null 2>&1 || die "could not create user $user"
		fi
		PG_CTL=(runuser -u "$user" -- "$PG_BIN/pg_ctl")
		local as=(runuser -u "$user" --)
		chmod 0711 "$TMP"
		mkdir -p "$TMP/pg"
		chown "$user:" "$TMP/pg"
	else
		user=$(id -un)
		PG_CTL=("$PG_BIN/pg_ctl")
		local as=()
		mkdir -p "$TMP/pg"
	fi
	local dir=$TMP/pg
	(cd "$dir" && "${as[@]}" mkdir -m 0700 "$dir/sock") ||
		die "user $user cannot write to $dir (is $(dirname "$TMP") traversable?)"
	if ! (cd "$dir" && "${as[@]}" "$PG_BIN/initdb" -D "$dir/data" -U "$user" --auth=trust \
		--encoding=UTF8 --locale=C --no-sync --no-instructions) >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		die "initdb failed"
	fi
	PG_DIR=$dir
	cat >>"$dir/data/postgresql.conf" <<-EOF

		# scripts/test.sh: loopback only, tuned for speed, not durability
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir/sock'
		max_connections = 200
		shared_buffers = 128MB
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		wal_level = minimal
		max_wal_senders = 0
		max_wal_size = 1GB
		checkpoint_timeout = 30min
		autovacuum = off
		jit = off
	EOF
	printf '%s\n' 'local all all trust' 'host all all 127.0.0.1/32 trust' >"$dir/data/pg_hba.conf"
	local try port
	for try in $(seq 5); do
		pick_port
		port=$PORT
		# the log is created by pg_ctl, as the PostgreSQL user
		local pglog=$dir/postgres-$port.log
		if (cd "$dir" && "${PG_CTL[@]}" -D "$dir/data" -l "$pglog" -w -t 60 -o "-p $port" start) >"$dir/pg_ctl.log" 2>&1; then
			PG_PORT=$port
			PG_USER=$user
			return 0
		fi
		if ! grep -qs 'Address already in use' "$pglog"; then
			cat "$dir/pg_ctl.log" "$pglog" >&2 2>/dev/null
			die "PostgreSQL did not start"
		fi
		log "PostgreSQL could not listen on port $port, trying another one"
		# make sure the failed attempt is gone before the next one
		(cd "$dir" && "${PG_CTL[@]}" -D "$dir/data" -m immediate -w stop) >/dev/null 2>&1 || true
	done
	die "could not start PostgreSQL on a free port"
}

# ---------------------------------------------------------------- MariaDB

# start_mariadb: a throwaway MariaDB in $TMP/mysql, run as PostgreSQL's
# user (PG_USER) when this script runs as root, as mariadbd refuses root;
# durability off, as PostgreSQL's. Sets MYSQL_PORT.
start_mariadb() {
	local dir=$TMP/mysql as=()
	mkdir -p "$dir"
	if [[ $EUID -eq 0 ]]; then
		as=(runuser -u "$PG_USER" --)
		chown "$PG_USER:" "$dir"
	fi
	if ! (cd "$dir" && "${as[@]}" mariadb-install-db --no-defaults --datadir="$dir/data" \
		--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve) >"$dir/install.log" 2>&1; then
		cat "$dir/install.log" >&2
		die "mariadb-install-db failed"
	fi
	MYSQL_DIR=$dir
	local try port
	for try in $(seq 5); do
		pick_port
		port=$PORT
		(cd "$dir" && exec "${as[@]}" /usr/sbin/mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/mysqld.sock" \
			--port="$port" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$dir/mysqld.pid" \
			--log-error="$dir/error-$port.log" --tmpdir="$dir" --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
			--innodb-doublewrite=0 --innodb-buffer-pool-size=256M --max-connections=300 \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci) </dev/null >/dev/null 2>&1 &
		for _ in $(seq 300); do
			if mariadb-admin --no-defaults --socket="$dir/mysqld.sock" -u root ping >/dev/null 2>&1 &&
				grep -qs "port: $port" "$dir/error-$port.log"; then
				MYSQL_PORT=$port
				mariadb --no-defaults --socket="$dir/mysqld.sock" -u root \
					-e "CREATE USER 'feedd'@'127.0.0.1'; GRANT ALL ON *.* TO 'feedd'@'127.0.0.1'" ||
					die "could not create the MariaDB user feedd"
				return 0
			fi
			grep -qs 'Address already in use\|Do you already have another' "$dir/error-$port.log" && break
			sleep 0.1
		done
		log "MariaDB did not start on port $port, trying another one: $(tail -n 3 "$dir/error-$port.log" 2>/dev/null | tr '\n' ' ')"
		if [[ -f $dir/mysqld.pid ]]; then
			kill -KILL "$(head -n1 "$dir/mysqld.pid")" 2>/dev/null
			rm -f "$dir/mysqld.pid"
		fi
		sleep 1
	done
	die "could not start MariaDB on a free port"
}

# ---------------------------------------------------------------- S3

# start_s3: versitygw serving S3 on loopback from $TMP/s3. Sets S3_PORT.
start_s3() {
	local dir=$TMP/s3 try port
	mkdir -p "$dir/meta" "$dir/data"
	for try in $(seq 5); do
		pick_port
		port=$PORT
		ROOT_ACCESS_KEY=feeddtest ROOT_SECRET_KEY=feeddtestsecret "$VERSITYGW" --port "127.0.0.1:$port" \
			posix --sidecar "$dir/meta" "$dir/data" </dev/null >"$dir/s3-$port.log" 2>&1 &
		S3_PID=$!
		for _ in $(seq 300); do
			kill -0 "$S3_PID" 2>/dev/null || break
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				S3_PORT=$port
				return 0
			fi
			sleep 0.1
		done
		kill -KILL "$S3_PID" 2>/dev/null
		wait "$S3_PID" 2>/dev/null || true
		S3_PID=""
		log "versitygw did not start on port $port: $(tail -n 3 "$dir/s3-$port.log" 2>/dev/null | tr '\n' ' ')"
	done
	die "could not start versitygw on a free port"
}

# ---------------------------------------------------------------- start

start_postgres
"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -t 30 ||
	die "PostgreSQL does not accept connections on 127.0.0.1:$PG_PORT"
export FEED_TEST_DATABASE_URL="postgres://$PG_USER@127.0.0.1:$PG_PORT/postgres?sslmode=disable"

start_mariadb
export FEED_TEST_MYSQL_DSN="feedd@tcp(127.0.0.1:$MYSQL_PORT)/"

start_redis_retry redis
REDIS_PORT=$PORT
export FEED_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"

CLUSTER_PORTS=()
for i in 1 2 3; do
	CLUSTER=1 start_redis_retry "cluster$i"
	CLUSTER_PORTS+=("$PORT")
done
if ! redis-cli --cluster create "${CLUSTER_PORTS[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes \
	</dev/null >"$TMP/cluster-create.log" 2>&1; then
	cat "$TMP/cluster-create.log" >&2
	die "redis-cli --cluster create failed"
fi
for p in "${CLUSTER_PORTS[@]}"; do
	ok=0
	for _ in $(seq 300); do
		if redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'; then
			ok=1
			break
		fi
		sleep 0.1
	done
	[[ $ok == 1 ]] || die "redis cluster node 127.0.0.1:$p never reached cluster_state:ok"
done
CLUSTER_ADDRS="${CLUSTER_PORTS[*]/#/127.0.0.1:}"
export FEED_TEST_REDIS_CLUSTER="${CLUSTER_ADDRS// /,}"
export FEED_REDIS_SERVER_BIN="$REDIS_SERVER"

# The OpenID provider of the single sign-on tests: a module of its own
# (internal/testenv/oidcprovider), built here from the Go module proxy.
log "building the tests' OpenID provider"
(cd internal/testenv/oidcprovider && go build -o "$TMP/oidcprovider" .) || die "build internal/testenv/oidcprovider failed"
export FEED_TEST_OIDC_PROVIDER_BIN="$TMP/oidcprovider"

start_s3
export FEED_TEST_S3_URL="http://127.0.0.1:$S3_PORT" FEED_TEST_S3_ACCESS_KEY=feeddtest FEED_TEST_S3_SECRET_KEY=feeddtestsecret
export FEED_S3_SERVER_BIN="$VERSITYGW" FEED_NGINX_BIN="$NGINX_BIN"

log "services: postgres 127.0.0.1:$PG_PORT (user $PG_USER), mariadb 127.0.0.1:$MYSQL_PORT, redis 127.0.0.1:$REDIS_PORT, redis cluster $FEED_TEST_REDIS_CLUSTER, s3 127.0.0.1:$S3_PORT; temp dir $TMP"

# ---------------------------------------------------------------- tests

# start_group CMD...: starts CMD in the background in its own session, so
# that the EXIT trap can end it with everything it started (test binaries,
# their redis-servers); its pid (== its pgid) is $GROUP.
start_group() {
	setsid "$@" </dev/null &
	GROUP=$!
	GROUP_PIDS+=("$GROUP")
}

# end_group PID [RC]: after PID ended (with status RC, or wait for it),
# stops whatever it left running in its session (e.g. a throwaway
# redis-server); returns its status.
end_group() {
	local pid=$1 rc=${2:-}
	if [[ -z $rc ]]; then
		rc=0
		wait "$pid" || rc=$?
	fi
	if kill -0 -- "-$pid" 2>/dev/null; then
		log "warning: stopping processes left running by group $pid"
		kill -TERM -- "-$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null
	fi
	local left=()
	for p in "${GROUP_PIDS[@]}"; do [[ $p == "$pid" ]] || left+=("$p"); done
	GROUP_PIDS=("${left[@]}")
	return "$rc"
}

# run_group CMD...: start_group and end_group, in the foreground.
run_group() {
	start_group "$@"
	end_group "$GROUP"
}

all_tests=$(( $# == 0 ))
# The end-to-end tests of feedd bench (cmd/feedd's TestBench*) check what
# each benchmark reports, not a race of the server they load (the other
# tests run its every path under -race): with the default arguments they
# run in the second go test, without -race, where they cost a fifth.
BENCH_TESTS='^TestBench'
if [[ $# -eq 0 ]]; then
	# The packages whose tests take longest first, so that go test (two
	# test binaries at a time) does not end on one of them alone.
	set -- -skip "$BENCH_TESTS" ./cmd/feedd ./redis ./sqlite ./postgres ./...
fi
rc=0
log "go mod tidy -diff"
run_group go mod tidy -diff || rc=$?
if [[ $rc -ne 0 ]]; then
	log "go.mod or go.sum is not tidy (exit $rc): run go mod tidy"
	exit "$rc"
fi
# go test -json, written as go test writes without it, then the slowest
# tests (scripts/testsummary.go); the exit status is go test's.
export TESTSUMMARY=$TMP/testsummary TESTSUMMARY_FLAGS=""
FULL_SIZE_SUITES='^Test(Packed)?(Feed|Hybrid|Reposts)$'

go build -o "$TESTSUMMARY" scripts/testsummary.go || die "could not build scripts/testsummary.go"
for a in "$@"; do
	[[ $a == -v || $a == -test.v || $a == -v=true ]] && TESTSUMMARY_FLAGS=-v
done
# go vet and staticcheck run alongside go test: they are a minute's work
# of a core at most, and go test's own start (building every package
# with -race) leaves room for it. The first of them to fail ends go test.
export STATICCHECK="honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" CHECKS_SECONDS=$TMP/checks-seconds
log "go vet ./... && go run $STATICCHECK ./..., alongside go test"
start_group bash -c 'began=$SECONDS
	go vet ./... || { echo "test.sh: go vet failed" >&2; exit 1; }
	go run "$STATICCHECK" ./... || { echo "test.sh: staticcheck failed" >&2; exit 1; }
	echo $((SECONDS - began)) >"$CHECKS_SECONDS"'
checks_pid=$GROUP
log "go test -race -count=1 -timeout 30m $*"
tests_began=$SECONDS
export FEED_TEST_JSON=${FEED_TEST_JSON:-/dev/null}
start_group bash -c 'set -o pipefail; go test -race -count=1 -timeout 30m -json "$@" | tee "$FEED_TEST_JSON" | "$TESTSUMMARY" $TESTSUMMARY_FLAGS' go-test "$@"
tests_pid=$GROUP
# The first to end: failed checks stop go test at once; otherwise each
# ends in turn (a status wait -n took is passed on, not waited for again).
first=""
first_rc=0
wait -n -p first "$checks_pid" "$tests_pid" || first_rc=$?
if [[ $first == "$checks_pid" && $first_rc -ne 0 ]]; then
	end_group "$checks_pid" "$first_rc" || true
	log "go vet or staticcheck failed (exit $first_rc): go test stopped"
	exit "$first_rc"
fi
taken() { [[ $1 == "$first" ]] && echo "$first_rc"; return 0; }
end_group "$tests_pid" "$(taken "$tests_pid")" || rc=$?
log "go test exit status $rc"
checks_rc=0
end_group "$checks_pid" "$(taken "$checks_pid")" || checks_rc=$?
if [[ $checks_rc -ne 0 ]]; then
	log "go vet or staticcheck failed (exit $checks_rc)"
	exit "$checks_rc"
fi
race_end=$SECONDS
# Without -race, only with the default arguments: the randomized feed
# suites at full size (under -race they run with a fifth of their worlds,
# at least 100 posts (feedtest.sized), as the detector makes each
# operation about ten times as costly), and the benchmarks' end-to-end
# tests.
if [[ $all_tests -eq 1 ]]; then
	full=(go test -count=1 -timeout 10m -json -run "$FULL_SIZE_SUITES|$BENCH_TESTS" ./redis ./cmd/feedd ./postgres ./sqlite)
	log "${full[*]}"
	run_group bash -c 'set -o pipefail; "$@" | tee -a "$FEED_TEST_JSON" | "$TESTSUMMARY" -slowest 0' go-test-full "${full[@]}" || rc=$((rc == 0 ? 1 : rc))
fi
log "exit status $rc"
log "wall time $((SECONDS - script_began)) s: go test -race $((race_end - tests_began)) s (go vet and staticcheck $(cat "$CHECKS_SECONDS" 2>/dev/null || echo ?) s alongside), go test without -race $((SECONDS - race_end)) s"
exit "$rc"
