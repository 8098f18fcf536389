package feed_test

import (
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]feed.Limit{
		"10/10m": {N: 10, Window: 10 * time.Minute},
		"600/1m": {N: 600, Window: time.Minute},
		"10/24h": {N: 10, Window: 24 * time.Hour},
		"5/90s":  {N: 5, Window: 90 * time.Second},
		"0":      {},
		"0/1m":   {N: 0, Window: time.Minute},
	} {
		got, err := feed.ParseLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := feed.ParseLimit(got.String()); err != nil || again.Off() != got.Off() || (!got.Off() && again != got) {
			t.Errorf("ParseLimit(%q).String() = %q does not parse back: %+v, %v", in, got.String(), again, err)
		}
	}
	for _, in := range []string{"", "10", "10/", "/10m", "-1/1m", "10/0s", "10/-1m", "x/1m", "10/1parsec"} {
		if _, err := feed.ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) accepted", in)
		}
	}
}
