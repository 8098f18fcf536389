package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Environment variables of the S3 server scripts/test.sh starts (a real
// S3 server, versitygw, on loopback).
const (
	EnvS3          = "FEED_TEST_S3_URL"        // http://127.0.0.1:PORT
	EnvS3AccessKey = "FEED_TEST_S3_ACCESS_KEY" // its root access key
	EnvS3SecretKey = "FEED_TEST_S3_SECRET_KEY" // and secret key
	EnvS3ServerBin = "FEED_S3_SERVER_BIN"      // the server's binary, for tests that run their own
	EnvNginx       = "FEED_NGINX_BIN"          // nginx, feedd bench media's baseline
)

// S3 is a bucket of an S3 server for one test.
type S3 struct {
	URL       string // http://HOST:PORT/BUCKET, as --media-s3 takes it
	AccessKey string
	SecretKey string
}

// S3Bucket returns a fresh bucket name on the test S3 server (feedd
// creates it at start).
func S3Bucket(t testing.TB) S3 {
	t.Helper()
	base := need(t, EnvS3)
	return S3{URL: base + "/feedd-" + Unique(), AccessKey: os.Getenv(EnvS3AccessKey), SecretKey: os.Getenv(EnvS3SecretKey)}
}

// S3Server starts an S3 server of its own for t (one the test may stop),
// in t's temporary directory, and returns a bucket on it and the function
// that stops it (also called when the test ends).
func S3Server(t testing.TB) (S3, func()) {
	t.Helper()
	bin := need(t, EnvS3ServerBin)
	dir := t.TempDir()
	meta, data := filepath.Join(dir, "meta"), filepath.Join(dir, "data")
	for _, d := range []string{meta, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--port", addr, "posix", "--sidecar", meta, data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY=testkey", "ROOT_SECRET_KEY=testsecret")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { cmd.Wait(); close(stopped) }()
	stop := func() {
		select {
		case <-stopped:
		default:
			cmd.Process.Kill()
			<-stopped
		}
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case <-stopped:
			t.Fatalf("S3 server %s exited", bin)
		case <-ctx.Done():
			t.Fatalf("S3 server did not listen on %s within 30s", addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return S3{URL: fmt.Sprintf("http://%s/feedd-%s", addr, Unique()), AccessKey: "testkey", SecretKey: "testsecret"}, stop
}
