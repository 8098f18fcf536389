package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// SQLite3 returns the path of the stock sqlite3 command-line shell
// (Debian's package sqlite3, which scripts/test.sh installs when missing),
// for tests of what an operator's shell can do to feedd's databases. When
// there is none the test is skipped, except under CI=true, where it fails.
func SQLite3(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no sqlite3 shell (%v); under CI=true no test skips for a missing tool (run scripts/test.sh)", err)
		}
		t.Skipf("no sqlite3 shell (%v); run the tests with scripts/test.sh", err)
	}
	return path
}
