package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/testimg"
)

// MediaOptions shape `feedd bench media`.
type MediaOptions struct {
	// Uploads of a PhotoMP-megapixel JPEG, Concurrency at once: uploads/s
	// and their latency.
	Uploads, Concurrency int
	PhotoMP              float64
	// BigClients upload a BigMP-megapixel JPEG each, all at once, BigRounds
	// times: the process's peak resident memory in each round.
	BigClients, BigRounds int
	BigMP                 float64
	// Previews images are uploaded and their previews read by
	// ReadConcurrency clients for Duration, from feedd and (when Nginx
	// names its binary and the images are files) from nginx serving the
	// same files.
	Previews, ReadConcurrency int
	Duration                  time.Duration
	Nginx                     string
	// CPUProfile, when set, receives a CPU profile of this process (server
	// and clients) while it reads the previews from feedd.
	CPUProfile string
}

// DefaultMediaOptions are the figures of BENCHMARKS.md, "Photos".
func DefaultMediaOptions() MediaOptions {
	return MediaOptions{Uploads: 40, Concurrency: 4, PhotoMP: 12, BigClients: 16, BigRounds: 2, BigMP: 40,
		Previews: 200, ReadConcurrency: 64, Duration: 10 * time.Second}
}

// MediaResult is what `feedd bench media` measured.
type MediaResult struct {
	Store          string    `json:"store"` // files or s3
	PhotoBytes     int       `json:"photo_bytes"`
	UploadsPerS    float64   `json:"uploads_per_s"`
	UploadP50MS    float64   `json:"upload_p50_ms"`
	UploadP99MS    float64   `json:"upload_p99_ms"`
	BigBytes       int       `json:"big_bytes"`
	RSSBeforeMB    float64   `json:"rss_before_mb"`
	BigPeakRSSMB   []float64 `json:"big_peak_rss_mb"` // per round
	BigRefused     int       `json:"big_refused"`     // 503s of the big uploads (busy), retried
	PreviewBytes   int       `json:"preview_bytes"`   // mean size of a preview
	PreviewsPerS   float64   `json:"previews_per_s"`
	NginxPerS      float64   `json:"nginx_previews_per_s,omitempty"`
	FeeddOverNginx float64   `json:"feedd_over_nginx,omitempty"`
}

// Text is the result as a reader takes it.
func (r *MediaResult) Text() string {
	s := fmt.Sprintf("photos, images in %s\n"+
		"  uploads of a %d-byte photo: %.2f/s, p50 %.0f ms, p99 %.0f ms\n"+
		"  resident memory: %.0f MB before; peak %v MB while the big uploads (%d bytes each) ran, by round; %d answered busy and retried\n"+
		"  previews (%d bytes on average): %.0f/s from feedd\n",
		r.Store, r.PhotoBytes, r.UploadsPerS, r.UploadP50MS, r.UploadP99MS,
		r.RSSBeforeMB, r.BigPeakRSSMB, r.BigBytes, r.BigRefused, r.PreviewBytes, r.PreviewsPerS)
	if r.NginxPerS > 0 {
		s += fmt.Sprintf("  previews from nginx on the same files: %.0f/s; feedd/nginx %.2f\n", r.NginxPerS, r.FeeddOverNginx)
	}
	return s
}

// Media runs `feedd bench media` on env: its HTTP API on a loopback
// listener, uploads through POST /v1/media, previews read through
// GET /imgs/p/... The uploaded bytes differ by a few bytes after the
// image's end each time, so that no upload is a copy of another.
func Media(ctx context.Context, env *Env, o MediaOptions) (*MediaResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: env.Handler(nil)}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * max(o.ReadConcurrency, o.BigClients), DisableCompression: true}}
	defer hc.CloseIdleConnections()

	r := &MediaResult{Store: "files"}
	if env.MediaDir == "" {
		r.Store = "s3"
	}
	tokens := make([]string, max(o.Concurrency, o.BigClients, 1))
	for i := range tokens {
		u, err := env.Service.Users.FindOrCreateUser(ctx, fmt.Sprintf("139%08d", 50000+i), fmt.Sprintf("media_%d", i), env.now())
		if err != nil {
			return nil, err
		}
		if tokens[i], err = session(ctx, env, u.ID); err != nil {
			return nil, err
		}
	}

	// Uploads of a photo, Concurrency at once.
	photo := testimg.Scene(mp(o.PhotoMP), 1)
	r.PhotoBytes = len(photo)
	env.logf("uploading %d photos of %d bytes, %d at once", o.Uploads, len(photo), o.Concurrency)
	var mu sync.Mutex
	var lat Latencies
	began := time.Now()
	err = parallel(ctx, o.Concurrency, o.Uploads, func(ctx context.Context, i int) error {
		t0 := time.Now()
		if _, _, err := upload(ctx, hc, base, tokens[i%o.Concurrency], photo, false); err != nil {
			return err
		}
		mu.Lock()
		lat = append(lat, time.Since(t0))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.UploadsPerS = round(float64(o.Uploads)/time.Since(began).Seconds(), 3)
	r.UploadP50MS, r.UploadP99MS = round(ms(lat.Quantile(0.5)), 1), round(ms(lat.Quantile(0.99)), 1)

	// The big uploads, all at once, in rounds: the peak of each.
	big := testimg.Scene(mp(o.BigMP), 2)
	r.BigBytes = len(big)
	r.RSSBeforeMB = rssMB("VmRSS")
	var refused atomic.Int64
	for round := range o.BigRounds {
		resetPeakRSS()
		env.logf("round %d: %d uploads of %d bytes at once", round+1, o.BigClients, len(big))
		err := parallel(ctx, o.BigClients, o.BigClients, func(ctx context.Context, i int) error {
			_, busy, err := upload(ctx, hc, base, tokens[i], big, true)
			refused.Add(int64(busy))
			return err
		})
		if err != nil {
			return nil, err
		}
		r.BigPeakRSSMB = append(r.BigPeakRSSMB, rssMB("VmHWM"))
	}
	r.BigRefused = int(refused.Load())
	big = nil

	// The previews.
	env.logf("uploading %d images for their previews", o.Previews)
	urls := make([]string, o.Previews)
	img := testimg.Scene(mp(min(o.PhotoMP, 1.92)), 3) // at most 1600 x 1200: a preview's source
	var total atomic.Int64
	err = parallel(ctx, o.Concurrency, o.Previews, func(ctx context.Context, i int) error {
		m, _, err := upload(ctx, hc, base, tokens[i%o.Concurrency], img, false)
		if err != nil {
			return err
		}
		var v struct {
			PreviewURL string `json:"preview_url"`
		}
		json.Unmarshal(m, &v)
		urls[i] = v.PreviewURL
		return nil
	})
	if err != nil {
		return nil, err
	}
	env.logf("reading previews from feedd, %d at once, for %s", o.ReadConcurrency, o.Duration)
	stop := func() {}
	if o.CPUProfile != "" {
		if stop, err = startCPUProfile(o.CPUProfile); err != nil {
			return nil, err
		}
	}
	r.PreviewsPerS, err = readLoop(ctx, hc, base, urls, o.ReadConcurrency, o.Duration, &total)
	stop()
	if err != nil {
		return nil, err
	}
	r.PreviewBytes = int(total.Load() / max(int64(r.PreviewsPerS*o.Duration.Seconds()), 1))
	if o.Nginx != "" && env.MediaDir != "" {
		nginx, stop, err := startNginx(ctx, o.Nginx, env.MediaDir)
		if err != nil {
			return nil, err
		}
		defer stop()
		env.logf("reading the same previews from nginx, %d at once, for %s", o.ReadConcurrency, o.Duration)
		if r.NginxPerS, err = readLoop(ctx, hc, nginx, urls, o.ReadConcurrency, o.Duration, &total); err != nil {
			return nil, err
		}
		r.FeeddOverNginx = round(r.PreviewsPerS/r.NginxPerS, 3)
	}
	return r, nil
}

func mp(megapixels float64) int { return int(megapixels * 1e6) }

// upload sends b (with 16 random bytes after it) to POST /v1/media as a
// raw JPEG body and returns the answer; with retryBusy, a 503 is retried
// after its Retry-After, and busy is the number of them.
func upload(ctx context.Context, hc *http.Client, base, token string, b []byte, retryBusy bool) (answer []byte, busy int, err error) {
	tail := make([]byte, 16)
	rand.Read(tail)
	for ; ; busy++ {
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/media", io.MultiReader(bytes.NewReader(b), bytes.NewReader(tail)))
		if err != nil {
			return nil, busy, err
		}
		req.ContentLength = int64(len(b) + len(tail))
		req.Header.Set("Content-Type", "image/jpeg")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, busy, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, busy, err
		}
		switch {
		case resp.StatusCode == http.StatusCreated:
			return body, busy, nil
		case resp.StatusCode == http.StatusServiceUnavailable && retryBusy:
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			select {
			case <-ctx.Done():
				return nil, busy, ctx.Err()
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
			}
		default:
			return nil, busy, fmt.Errorf("POST /v1/media: %d %s", resp.StatusCode, body)
		}
	}
}

// readLoop GETs urls from base in turn, n at once, for d, and returns the
// reads per second; total counts the bytes read.
func readLoop(ctx context.Context, hc *http.Client, base string, urls []string, n int, d time.Duration, total *atomic.Int64) (float64, error) {
	total.Store(0)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	began := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for i := w; ctx.Err() == nil; i += n {
				req, _ := http.NewRequestWithContext(ctx, "GET", base+urls[i%len(urls)], nil)
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						once.Do(func() { first = err })
					}
					return
				}
				k, err := io.CopyBuffer(io.Discard, resp.Body, buf)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && ctx.Err() == nil {
					once.Do(func() { first = fmt.Errorf("GET %s: %d", urls[i%len(urls)], resp.StatusCode) })
					return
				}
				if err == nil {
					done.Add(1)
					total.Add(k)
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return round(float64(done.Load())/time.Since(began).Seconds(), 1), nil
}

// startNginx serves dir's p/ tree at /imgs/p/ on a loopback port, as the
// tutorial's nginx serves its images, and returns its base URL and how
// to stop it.
func startNginx(ctx context.Context, bin, dir string) (string, func(), error) {
	tmp, err := os.MkdirTemp("", "feedd-bench-nginx-")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the media directory is private to its owner
	}
	conf := fmt.Sprintf(`%s
worker_processes auto;
daemon off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    types { image/jpeg jpg; image/png png; }
    default_type application/octet-stream;
    server {
        listen %[3]s;
        location /imgs/p/ {
            alias %[4]s/;
            add_header Cache-Control "public, max-age=31536000, immutable";
        }
    }
}
`, user, tmp, addr, filepath.Join(dir, "p"))
	if err := os.WriteFile(filepath.Join(tmp, "nginx.conf"), []byte(conf), 0o644); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	cmd := exec.Command(bin, "-c", filepath.Join(tmp, "nginx.conf"), "-p", tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(os.Interrupt) // SIGINT: a fast shutdown
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		os.RemoveAll(tmp)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
		select {
		case <-exited:
			os.RemoveAll(tmp)
			return "", nil, fmt.Errorf("nginx exited: %s", strings.TrimSpace(stderr.String()))
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("nginx did not listen within 10s")
		}
	}
}

// rssMB reads a memory figure of this process (VmRSS, VmHWM) in MB.
func rssMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return round(kb/1024, 1)
		}
	}
	return 0
}

// resetPeakRSS makes VmHWM the resident memory of now (Linux's
// clear_refs 5).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }
