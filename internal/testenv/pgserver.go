package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvPGBin names the directory of PostgreSQL's binaries (initdb, pg_ctl,
// postgres); scripts/test.sh reads it too.
const EnvPGBin = "FEED_PG_BIN"

// PGServer is a PostgreSQL server of one test's own, for tests that stop or
// restart it: the server of FEED_TEST_DATABASE_URL is shared by every test
// and must stay up.
type PGServer struct {
	URL  string // postgres:// URL of database postgres, superuser, loopback
	dir  string
	port int
	as   []string // command prefix running a command as the server's user
	bin  string
}

// StartPostgres initdb's a server in a temporary directory, starts it on
// a free loopback port and stops it when the test ends. As root it runs as
// the user `postgres`, or `feeddtest` (which scripts/test.sh creates), as
// PostgreSQL refuses to run as root. The binaries are those of FEED_PG_BIN
// (default /usr/lib/postgresql/15/bin); without them the test is skipped,
// or fails under CI=true.
func StartPostgres(t testing.TB) *PGServer {
	t.Helper()
	bin := os.Getenv(EnvPGBin)
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		skipOrFail(t, fmt.Sprintf("no PostgreSQL binaries in %s (set %s)", bin, EnvPGBin))
	}
	s := &PGServer{bin: bin}
	dir, err := os.MkdirTemp("", "feedd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		name := ""
		for _, n := range []string{"postgres", "feeddtest"} {
			if _, err := user.Lookup(n); err == nil {
				name = n
				break
			}
		}
		if name == "" {
			skipOrFail(t, "running as root and neither user postgres nor feeddtest exists to run PostgreSQL as")
		}
		u, _ := user.Lookup(name)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = []string{"runuser", "-u", name, "--"}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 100\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\njit = off\n", dir)
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		s.port = freePort(t)
		out, err := s.ctl("start", "-w", "-t", "60", "-o", "-p "+strconv.Itoa(s.port))
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("pg_ctl start: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() { s.ctl("stop", "-m", "immediate", "-w") })
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("connect to the test's PostgreSQL: %v", err)
	}
	conn.Close(ctx)
	return s
}

// Stop stops the server with pg_ctl stop -m fast (connections are ended,
// transactions rolled back) and waits until it is down.
func (s *PGServer) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.ctl("stop", "-m", "fast", "-w", "-t", "60"); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// Start starts a stopped server on its port again and waits until it
// accepts connections.
func (s *PGServer) Start(t testing.TB) {
	t.Helper()
	if out, err := s.ctl("start", "-w", "-t", "60", "-o", "-p "+strconv.Itoa(s.port)); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
}

func (s *PGServer) data() string { return filepath.Join(s.dir, "data") }

func (s *PGServer) ctl(args ...string) ([]byte, error) {
	return s.run("pg_ctl", append([]string{"-D", s.data(), "-l", filepath.Join(s.dir, "log")}, args...)...)
}

func (s *PGServer) run(name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, s.as...), filepath.Join(s.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

// Log is the server's log so far, for a failing test's report.
func (s *PGServer) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return strings.TrimSpace(string(b))
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; under CI=true no test skips for a missing service", why)
	}
	t.Skip(why)
}
