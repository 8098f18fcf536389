package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvOIDCProvider names the binary of the tests' OpenID provider
// (oidcprovider/, a module of its own), which scripts/test.sh builds.
// Without it the provider is built here, once per test binary.
const EnvOIDCProvider = "FEED_TEST_OIDC_PROVIDER_BIN"

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// oidcProviderBin returns the provider's binary: EnvOIDCProvider's, or one
// built from oidcprovider/ into a temporary directory.
func oidcProviderBin(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvOIDCProvider); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		dir, err := os.MkdirTemp("", "feedd-oidcprovider")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "oidcprovider")
		cmd := exec.Command("go", "build", "-o", built, ".")
		cmd.Dir = filepath.Join(filepath.Dir(file), "oidcprovider")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("build the tests' OpenID provider: %v", buildErr)
		}
		t.Skipf("build the tests' OpenID provider (run the tests with scripts/test.sh): %v", buildErr)
	}
	return built
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// OIDCProvider starts the tests' OpenID provider (zitadel/oidc's OpenID
// Certified provider, internal/testenv/oidcprovider) on a free loopback
// port, with one web client (clientID, secret, redirect), and returns its
// issuer URL. It is stopped when the test ends. Its one user signs in as
// OIDCUser with OIDCPassword.
func OIDCProvider(t testing.TB, clientID, secret, redirect string) (issuer string) {
	t.Helper()
	cmd := exec.Command(oidcProviderBin(t), "-client", clientID, "-secret", secret, "-redirect", redirect)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the OpenID provider: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case issuer = <-line:
	case <-time.After(30 * time.Second):
		t.Fatal("the OpenID provider did not start within 30s")
	}
	if !strings.HasPrefix(issuer, "http://127.0.0.1:") {
		t.Fatalf("the OpenID provider printed %q, not its issuer", issuer)
	}
	return issuer
}

// The tests' OpenID provider's user (its example storage's).
const (
	OIDCUser     = "test-user@127.0.0.1"
	OIDCPassword = "verysecure"
	OIDCSubject  = "id1"
)
