package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// releaseBuilt holds the release binaries of HEAD, built once per test run
// by scripts/release.sh --snapshot (HEAD need not be a release) into dir (removed by TestMain). The build starts
// with the test binary when the release tests are to run (TestMain calls
// startReleaseBuild), so that it overlaps the package's other tests.
var releaseBuilt struct {
	once sync.Once
	done chan struct{}
	dir  string
	err  error
	out  []byte
}

// releaseEnv is the environment of the tests' release builds: this
// machine's target only (scripts/release.sh builds linux/amd64 and
// linux/arm64 by default; a cross-compilation of the whole tree would
// double the build's cost and check nothing feedd's code decides).
func releaseEnv() []string {
	return append(os.Environ(), "TARGETS=linux/"+runtime.GOARCH)
}

// startReleaseBuild starts the release build in the background, once.
func startReleaseBuild() {
	releaseBuilt.once.Do(func() {
		releaseBuilt.done = make(chan struct{})
		go func() {
			defer close(releaseBuilt.done)
			releaseBuilt.dir, releaseBuilt.err = os.MkdirTemp("", "feedd-release-")
			if releaseBuilt.err != nil {
				return
			}
			cmd := exec.Command("../../scripts/release.sh", "--snapshot", "-o", releaseBuilt.dir)
			cmd.Env = releaseEnv()
			releaseBuilt.out, releaseBuilt.err = cmd.CombinedOutput()
		}()
	})
}

// releaseTestsRun reports whether -test.run selects the release tests.
func releaseTestsRun() bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}
	re, err := regexp.Compile(strings.SplitN(f.Value.String(), "/", 2)[0])
	return err == nil && (re.MatchString("TestReleaseReproducible") || re.MatchString("TestReleaseBinaryInEmptyRoot"))
}

// releaseBuild waits for the release build and returns its directory.
func releaseBuild(t *testing.T) string {
	t.Helper()
	startReleaseBuild()
	<-releaseBuilt.done
	if releaseBuilt.err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", releaseBuilt.err, releaseBuilt.out)
	}
	return releaseBuilt.dir
}

func headCommit(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git rev-parse HEAD: %v; under CI=true the release build must be checked", err)
		}
		t.Skipf("no git checkout to build a release from: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestReleaseReproducible: scripts/release.sh builds HEAD again, from
// another clone in another directory, and gets the same bytes for every
// target (SHA256SUMS equal): no path, time or build id of one build
// reaches its binary. (The two share Go's build cache, whose entries are
// keyed by their inputs, so that the test costs one build; to compare
// with a build from nothing, run scripts/release.sh with GOCACHE set to an
// empty directory.) Each binary is static, built with -trimpath, and says
// which commit it was built from.
func TestReleaseReproducible(t *testing.T) {
	t.Parallel()
	head := headCommit(t)
	first := releaseBuild(t)
	second := t.TempDir()
	cmd := exec.Command("../../scripts/release.sh", "--snapshot", "-o", second)
	cmd.Env = releaseEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh, second build: %v\n%s", err, out)
	}
	a, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("two builds of %s differ:\n%s\n%s", head, a, b)
	}
	lines := strings.Split(strings.TrimSpace(string(a)), "\n")
	if len(lines) != 1 || !strings.HasSuffix(lines[0], "-linux-"+runtime.GOARCH) {
		t.Fatalf("SHA256SUMS lists %q, want the linux/%s binary (releaseEnv)", lines, runtime.GOARCH)
	}
	t.Logf("SHA256SUMS of %s, built twice:\n%s", head, a)
	for _, l := range lines {
		bin := filepath.Join(first, strings.Fields(l)[1])
		info, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v\n%s", bin, err, info)
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath=true", "vcs.revision=" + head, "vcs.modified=false"} {
			if !strings.Contains(string(info), want) {
				t.Errorf("%s: no %s in its build information:\n%s", bin, want, info)
			}
		}
	}
}

// TestReleaseBinaryInEmptyRoot: the release binary for this machine runs
// in a root directory holding nothing but itself and its data directory,
// as in the image (deploy/Dockerfile): no libc, no /etc, no /tmp, a root it
// cannot write to, run as the image's user (65532) with the image's
// environment (chroot --userspec, or unshare's user namespace when not
// root). It prints its version, then serves the embedded default:
// health, the web page and a login code request that writes to its SQLite
// files, on loopback; a write of a shared group-commit batch whose
// savepoint journals more than SQLite keeps in memory (spillWrite); it
// stops cleanly on SIGTERM.
func TestReleaseBinaryInEmptyRoot(t *testing.T) {
	t.Parallel()
	head := headCommit(t)
	env, uid, gid := imageConfig(t)
	var enter []string
	switch {
	case os.Geteuid() == 0:
		enter = []string{"chroot", fmt.Sprintf("--userspec=%d:%d", uid, gid)}
	default:
		if err := exec.Command("unshare", "--map-user", fmt.Sprint(uid), "--map-group", fmt.Sprint(gid), "true").Run(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("neither root (chroot) nor unshare --map-user: %v", err)
			}
			t.Skipf("neither root (chroot) nor unshare --map-user: %v", err)
		}
		enter = []string{"unshare", "--map-user", fmt.Sprint(uid), "--map-group", fmt.Sprint(gid), "--root"}
	}
	dir := releaseBuild(t)
	matches, _ := filepath.Glob(filepath.Join(dir, "feedd-*-linux-"+runtime.GOARCH))
	if len(matches) != 1 {
		t.Skipf("no release binary for %s in %s", runtime.GOARCH, dir)
	}
	root := t.TempDir()
	bin, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "feedd"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The image's data directory, its user's; the root, nobody's to write.
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(data, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(root, 0o755) })
	inRoot := func(args ...string) *exec.Cmd {
		cmd := exec.Command(enter[0], append(append(enter[1:], root, "/feedd"), args...)...)
		cmd.Env = env // the image's, nothing from this process's environment
		return cmd
	}

	out, err := inRoot("version").CombinedOutput()
	if err != nil {
		t.Fatalf("feedd version in an empty root: %v\n%s", err, out)
	}
	if want := "feedd " + release + " (commit " + head + ", clean, "; !strings.HasPrefix(string(out), want) {
		t.Errorf("feedd version in an empty root printed %q, want it to start %q", out, want)
	}
	t.Logf("feedd version: %s", out)

	cmd := inRoot(append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "off", "--data", "/data", "--log-format", "json",
		"--backfill", "400"}, testServeFlags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	addr := make(chan string, 1)
	var logs bytes.Buffer
	var logsMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logsMu.Lock()
			logs.Write(append(sc.Bytes(), '\n'))
			logsMu.Unlock()
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "listening" {
				if a, ok := rec["addr"].(string); ok {
					addr <- a
				}
			}
		}
		io.Copy(io.Discard, stderr)
		done <- cmd.Wait()
	}()
	defer cmd.Process.Kill()
	allLogs := func() string { logsMu.Lock(); defer logsMu.Unlock(); return logs.String() }
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("feedd serve in an empty root exited: %v\n%s", err, allLogs())
	case <-time.After(60 * time.Second):
		t.Fatalf("feedd serve in an empty root did not listen within 60s\n%s", allLogs())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/", "", 200},
		{"POST", "/v1/auth/code", `{"phone":"13800000001"}`, 204},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", c.method, c.path, err, allLogs())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.want)
		}
	}
	// The log is read from the process's pipe: the line may follow the answer.
	waitFor(t, "the login code logged", func() bool { return strings.Contains(allLogs(), `"msg":"login code"`) })
	spillWrite(t, client, base, data, allLogs)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("feedd serve in an empty root, after SIGTERM: %v\n%s", err, allLogs())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("feedd did not stop within 30s of SIGTERM")
	}
	// What it made: its data directory, nothing else.
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[data feedd]" {
		t.Errorf("the root holds %v after serving, want [data feedd]", names)
	}
}

// TestReleaseRefuses: scripts/release.sh builds a release only from a
// release's commit, with nothing uncommitted and a CHANGELOG.md that
// agrees; otherwise it says why and builds nothing. In a clone of HEAD,
// this checkout's release.sh, version.go and CHANGELOG.md committed, then
// each case set up and committed: a -dev version, a CHANGELOG.md whose
// newest release is another, one with changes left under [Unreleased], a
// change not committed; and at last a proper release, which --check
// passes (TestReleaseReproducible builds).
func TestReleaseRefuses(t *testing.T) {
	t.Parallel()
	head := headCommit(t)
	dir := filepath.Join(t.TempDir(), "src")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=feedd", "-c", "user.email=feedd@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if out, err := exec.Command("git", "clone", "-q", "--no-checkout", "../..", dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	git("-c", "advice.detachedHead=false", "checkout", "-q", head)
	for _, f := range []string{"scripts/release.sh", "version.go", "CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Now().UTC().Format(time.DateOnly)
	write := func(version, changelog string) {
		t.Helper()
		changelog = strings.ReplaceAll(changelog, "DAY", day)
		src := "package feed\n\nconst Release = \"" + version + "\"\n"
		if err := os.WriteFile(filepath.Join(dir, "version.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		head := "# Changelog\n\nWhat changed.\n\n"
		if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(head+changelog), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", "release "+version)
	}
	release := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(dir, "scripts/release.sh"), append(args, "-o", filepath.Join(dir, "dist"))...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		name, version, changelog, want string
	}{
		{"a -dev version", "9.8.7-dev", "## [Unreleased]\n\n- more\n\n## [9.8.6] - DAY\n", "is version 9.8.7-dev, not a release"},
		{"another release in CHANGELOG.md", "9.8.7", "## [Unreleased]\n\n## [9.8.6] - DAY\n", `its newest section is "## [9.8.6] - DAY"`},
		{"an undated section", "9.8.7", "## [9.8.7]\n\n- more\n", `its newest section is "## [9.8.7]"`},
		{"changes left unreleased", "9.8.7", "## [Unreleased]\n\n- more\n\n## [9.8.7] - DAY\n", "still lists changes under [Unreleased]"},
	} {
		write(c.version, c.changelog)
		want := strings.ReplaceAll(c.want, "DAY", day)
		if out, err := release(); err == nil || !strings.Contains(out, want) {
			t.Errorf("%s: release.sh = %v\n%s\nwant a refusal saying %q", c.name, err, out, want)
		}
	}
	write("9.8.7", "## [Unreleased]\n\n## [9.8.7] - DAY\n\n- more\n")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := release(); err == nil || !strings.Contains(out, "has changes not committed") {
		t.Errorf("a change not committed: release.sh = %v\n%s\nwant a refusal", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "dist")); !os.IsNotExist(err) {
		t.Errorf("a refused release.sh left %s/dist: %v", dir, err)
	}
	git("checkout", "-q", "README.md")
	if out, err := release("--check"); err != nil || !strings.Contains(out, "9.8.7 (commit ") || !strings.Contains(out, "can be released") {
		t.Errorf("release.sh --check of release 9.8.7: %v\n%s", err, out)
	}
}

// imageConfig reads deploy/Dockerfile's environment (ENV) and user (USER
// uid:gid), which the empty-root test runs the binary with.
func imageConfig(t *testing.T) (env []string, uid, gid int) {
	t.Helper()
	b, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "ENV":
			env = append(env, f[1:]...)
		case len(f) == 2 && f[0] == "USER":
			if _, err := fmt.Sscanf(f[1], "%d:%d", &uid, &gid); err != nil {
				t.Fatalf("deploy/Dockerfile: USER %s, want uid:gid", f[1])
			}
		}
	}
	if uid <= 0 || gid <= 0 {
		t.Fatal("deploy/Dockerfile names no USER uid:gid other than root")
	}
	return env, uid, gid
}

// spillWrite makes writes of shared group-commit batches (sqlite/commit.go)
// copy more pages into their savepoints' journals than SQLite keeps in
// memory (64 KiB) before it spills them to a temporary file: 40 followers
// of an author each have 400 entries in their inbox (a page and a half of
// inbox.db each), and 16 posts published at once are delivered to all of
// them by jobs that run side by side, each delivery a write to 40 pages.
// Without a place for SQLite's temporary files such a batch fails ("disk
// I/O error") and rolls back the writes it shared.
func spillWrite(t *testing.T, client *http.Client, base, data string, logs func() string) {
	t.Helper()
	call := func(method, path, token string, body any, out any) int {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0
		}
		defer resp.Body.Close()
		if out != nil {
			json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	codeOf := regexp.MustCompile(`"msg":"login code","phone":"(\d+)","code":"(\d+)"`)
	login := func(phone string) string {
		t.Helper()
		if st := call("POST", "/v1/auth/code", "", map[string]string{"phone": phone}, nil); st != 204 {
			t.Fatalf("code for %s: %d", phone, st)
		}
		var code string
		waitFor(t, "the login code of "+phone+" in the log", func() bool {
			for _, m := range codeOf.FindAllStringSubmatch(logs(), -1) {
				if m[1] == phone {
					code = m[2]
				}
			}
			return code != ""
		})
		var session struct{ Token string }
		if st := call("POST", "/v1/auth/login", "", map[string]string{"phone": phone, "code": code}, &session); st != 201 {
			t.Fatalf("login %s: %d", phone, st)
		}
		return session.Token
	}
	const followers, backfill, burst = 40, 400, 16
	author := login("13800000010")
	var me struct{ ID int64 }
	call("GET", "/v1/me", author, nil, &me)
	publish := func(title string) {
		if st := call("POST", "/v1/posts", author, map[string]string{"title": title, "content": "x"}, nil); st != 201 {
			t.Errorf("publish %s: %d", title, st)
		}
	}
	for i := range backfill {
		publish(fmt.Sprint("old ", i))
	}
	for i := range followers {
		tok := login(fmt.Sprintf("138000001%02d", i))
		if st := call("PUT", fmt.Sprintf("/v1/following/%d", me.ID), tok, nil, nil); st != 204 {
			t.Fatalf("follow: %d", st)
		}
	}
	db := openRead(t, data)
	entries := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM inbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "the followers' backfill", func() bool { return entries() == (followers+1)*backfill })
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			publish(fmt.Sprint("new ", i))
		}()
	}
	wg.Wait()
	waitFor(t, "the new posts delivered", func() bool { return entries() == (followers+1)*(backfill+burst) })
	if strings.Contains(logs(), "disk I/O error") {
		t.Errorf("writes failed while deliveries shared their batches:\n%s", logs())
	}
}
