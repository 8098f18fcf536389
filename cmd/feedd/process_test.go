package main

import (
	"bufio"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TestMain removes the feedd binaries that process and release tests build.
func TestMain(m *testing.M) {
	flag.Parse()
	if releaseTestsRun() {
		startReleaseBuild()
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if releaseBuilt.done != nil {
		<-releaseBuilt.done
		os.RemoveAll(releaseBuilt.dir)
	}
	os.Exit(code)
}

// feeddBinary builds cmd/feedd once per test run, for tests that need a real
// process to kill, as scripts/release.sh builds it (static, -trimpath, the
// commit recorded), so that the two builds share Go's build cache.
func feeddBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "feedd-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-ldflags=-s -w -buildid=", "-o", filepath.Join(buildDir, "feedd"), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build feedd: %v", buildErr)
	}
	return filepath.Join(buildDir, "feedd")
}

// proc is a feedd process started from the built binary.
type proc struct {
	cmd   *exec.Cmd
	logs  *logBuffer
	addr  string
	admin string // address of the admin listener, "" when off
	done  chan struct{}
}

// startProc starts `feedd args...` with JSON logs and, for serve, waits
// until it listens. A serve process's admin listener is on a free port
// unless args say otherwise (a worker's is off unless args turn it on).
func startProc(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return startProcBin(t, feeddBinary(t), env, args...)
}

// startProcBin is startProc of the feedd binary bin.
func startProcBin(t testing.TB, bin string, env []string, args ...string) *proc {
	t.Helper()
	serve := len(args) == 0 || args[0] == "serve"
	args = append(args, "--log-format", "json")
	if serve && !slices.Contains(args, "--admin-addr") {
		args = append(args, "--admin-addr", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), testServeEnv...), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: newLogBuffer(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.logs.Write(append(sc.Bytes(), '\n'))
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	if serve {
		rec := p.logs.wait(t, "listening", nil)
		p.addr = rec["addr"].(string)
	} else {
		p.logs.wait(t, "worker started", nil)
	}
	if rec := p.logs.find("admin listening", nil); rec != nil {
		p.admin = rec["addr"].(string)
	}
	return p
}

// kill ends the process with SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// stop asks the process to shut down gracefully (SIGTERM) and waits: it
// must log "stopped" and exit with status 0.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("feedd did not stop within 30s of SIGTERM")
		p.kill()
		return
	}
	// done is closed after cmd.Wait, once the whole log is read.
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("feedd exited with status %d after SIGTERM", code)
	}
	if p.logs.find("stopped", nil) == nil {
		t.Errorf(`feedd exited without logging "stopped"`)
	}
}

func (p *proc) client(t testing.TB) *server {
	return &server{t: t, base: "http://" + p.addr, logs: p.logs}
}
