package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/testenv"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSentinel runs feedd against a Redis behind a Sentinel: the same
// client code path (redis.UniversalClient) finds the master through it.
func TestSentinel(t *testing.T) {
	master := startOwnRedis(t)
	port := freePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor feedd 127.0.0.1 %d 1\n", port, dir, master.port)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(master.bin, conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := goredis.NewSentinelClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer sc.Close()
	waitFor(t, "sentinel up", func() bool {
		addr, err := sc.GetMasterAddrByName(context.Background(), "feedd").Result()
		return err == nil && addr[1] == strconv.Itoa(master.port)
	})

	db := testenv.PostgresURL(t)
	s := startServer(t, "--database-url", db, "--redis-url", fmt.Sprintf("redis://127.0.0.1:%d/0?master_name=feedd", port))
	a, f := s.login("13800000001"), s.login("13800000002")
	s.must("PUT", fmt.Sprintf("/follow/%d/true", s.me(a)), f, nil, nil)
	var id int64
	s.must("POST", "/blog", a, map[string]any{"title": "via sentinel", "content": "hi"}, &id)
	b := &backendArgs{rdb: master.client(t)}
	fID := s.me(f)
	waitFor(t, "delivery through the Sentinel's master", func() bool { return slices.Contains(b.inboxIDs(t, fID), id) })
	if got := ids(s.scrollAll(f, 10)); !slices.Equal(got, []int64{id}) {
		t.Fatalf("feed %v", got)
	}
}
