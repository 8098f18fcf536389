package testenv

import (
	"cmp"
	"os"
	"os/exec"
	"testing"
)

// EnvChromium names the Chromium binary the browser tests drive (default
// Debian's /usr/bin/chromium, which scripts/test.sh installs when missing).
const EnvChromium = "FEED_CHROMIUM"

// Chromium returns the path of the Chromium binary for browser tests. When
// there is none the test is skipped, except under CI=true, where it fails.
func Chromium(t testing.TB) string {
	t.Helper()
	name := cmp.Or(os.Getenv(EnvChromium), "/usr/bin/chromium")
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Chromium at %s (%v); under CI=true no test skips for a missing browser (run scripts/test.sh)", name, err)
		}
		t.Skipf("no Chromium at %s (%v); run the tests with scripts/test.sh or set %s", name, err, EnvChromium)
	}
	return path
}
