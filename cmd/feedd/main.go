// Command feedd is the follow-feed service. It only wires packages together:
// configuration from flags and FEED_* environment variables, storage, the
// fan-out queue and the HTTP server.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "feedd:", err)
		os.Exit(1)
	}
}

const usage = `feedd: a follow-feed (timeline) service.

Usage:
  feedd [serve] [flags]   serve the HTTP API and work fan-out jobs (the default)
  feedd worker [flags]    work fan-out jobs only
  feedd migrate [flags]   apply database migrations and exit
  feedd push-key [flags]  print the public VAPID key browsers subscribe to Web Push with (made once, kept in the database)
  feedd seed [flags]      fill the database with a demo community (--users, --follows, --posts)
  feedd import hmdp       import the tutorial's MySQL and Redis, keeping ids (feedd import --help)
  feedd apikey create NAME | list | revoke NAME [flags]
                          make (printing it once), list or revoke a key of the server API
  feedd bench NAME        measure fan-out, reads, publish, memory, streams, mixed load, ranking,
                          small writes, notifications, import (feedd bench help)
  feedd version           print the release, the commit it was built from and the Go version (also --version)
  feedd help              show this text

With no --database-url, feedd runs embedded: two SQLite files in --data hold
everything, feedd.db (users, posts, sessions, codes and the job queue) and
inbox.db (the inboxes). Every flag can also be set
with the environment variable named after it.

docs/configuration.md describes every flag.

Flags:
`

// run is the whole program; main only supplies the process's context,
// arguments, environment and output. Tests call it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && (args[0][0] != '-' || args[0] == "--version" || args[0] == "-version") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version", "--version", "-version":
		if len(args) > 0 {
			return fmt.Errorf("feedd version takes no arguments")
		}
		fmt.Fprintln(stdout, version(debug.ReadBuildInfo()))
		return nil
	case "serve", "worker", "migrate", "seed", "push-key":
		cfg, err := parseConfig(cmd, args, getenv, stderr)
		if err != nil {
			return err
		}
		if cfg == nil {
			return nil // --help
		}
		return runApp(ctx, cfg, stdout, stderr)
	case "bench":
		return runBench(ctx, args, getenv, stdout, stderr)
	case "import":
		return runImport(ctx, args, getenv, stdout, stderr)
	case "apikey":
		return runAPIKey(ctx, args, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		fs, _ := newFlagSet("serve", &config{}, getenv, stdout) // help shows even with a malformed FEED_* value
		fs.PrintDefaults()
		return nil
	}
	return fmt.Errorf("unknown command %q (try feedd help)", cmd)
}
