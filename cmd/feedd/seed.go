package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/feedd/feedd/internal/seed"
)

// seedFlagSet is feedd seed's flag set: serve's, and its own.
func seedFlagSet(c *config, getenv func(string) string, out io.Writer) (*flag.FlagSet, error) {
	fs, err := newFlagSet("seed", c, getenv, out)
	o := &c.seed
	fs.IntVar(&o.Users, "users", seed.DefaultUsers, "seed: users of the demo community")
	fs.IntVar(&o.Follows, "follows", seed.DefaultFollows, "seed: users each user follows")
	fs.IntVar(&o.Posts, "posts", seed.DefaultPosts, "seed: posts each user publishes on average")
	if getenv("FEED_LOG_LEVEL") == "" {
		// Progress is the output; River's info lines are noise.
		fs.Set("log-level", "warn")
		fs.Lookup("log-level").DefValue = "warn"
	}
	return fs, err
}

// seedDemo runs feedd seed on the wired app: the community through the
// service, fan-out by this process's workers (or others'), then how to log
// in as its first user.
func seedDemo(ctx context.Context, c *config, a *app, stdout io.Writer) error {
	o := c.seed
	o.Progress = os.Stderr
	if stdout != os.Stdout {
		o.Progress = stdout // tests: progress lines beside the result
	}
	res, err := seed.Run(ctx, a.service, o)
	if err != nil {
		return err
	}
	where := "the SQLite database in " + c.dataDir
	if c.databaseURL != "" {
		where = "PostgreSQL"
	}
	fmt.Fprintf(stdout, `
Seeded %s: %d users, %d follows, %d posts, %d likes.
Log in as %s (user %d), whose timeline holds %d posts:
  phone %s; the login code is written to the server's log ("login code").
Start the server with the same flags (go run ./cmd/feedd) and open http://%s/
`, where, res.Users, res.Follows, res.Posts, res.Likes, res.NickName, res.UserID, res.Timeline, res.Phone, c.addr)
	return nil
}
