package imaging_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"runtime"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/imaging"
	"github.com/feedd/feedd/internal/testimg"
)

func process(t *testing.T, b []byte) (*feed.Renditions, error) {
	t.Helper()
	p := imaging.New(1)
	info, err := p.Inspect(b[:min(len(b), feed.InspectBytes)], feed.DefaultMediaMaxPixels)
	if err != nil {
		return nil, err
	}
	return p.Process(context.Background(), bytes.NewReader(b), int64(len(b)), info)
}

// TestGPSRemoved: a phone's photo, lying on its side with its GPS
// position, camera and a comment in it, comes out upright with none of
// them.
func TestGPSRemoved(t *testing.T) {
	in := testimg.Photo(300, 200, 6)
	if !bytes.Contains(in, []byte(testimg.Secret)) || !bytes.Contains(in, testimg.GPSLatitude()) {
		t.Fatal("the test photo lacks its metadata")
	}
	r, err := process(t, in)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"display": r.Display, "preview": r.Preview} {
		for _, leak := range [][]byte{[]byte(testimg.Secret), testimg.GPSLatitude(), []byte("Exif"), []byte{0xff, 0xe1}, []byte{0xff, 0xfe}} {
			if bytes.Contains(b, leak) {
				t.Errorf("%s rendition holds %q", name, leak)
			}
		}
	}
	if r.ContentType != "image/jpeg" || r.Width != 200 || r.Height != 300 {
		t.Fatalf("rendition %s %dx%d, want image/jpeg 200x300 (turned upright)", r.ContentType, r.Width, r.Height)
	}
	img, err := jpeg.Decode(bytes.NewReader(r.Display))
	if err != nil {
		t.Fatal(err)
	}
	// Orientation 6 turns the picture a quarter clockwise: its bottom
	// left (blue) quadrant is now at the top left.
	if c := img.At(20, 20); !near(c, 0, 0, 255) {
		t.Fatalf("top left after orientation 6 is %v, want blue", c)
	}
	if r.Blurhash == "" || len(r.Preview) == 0 {
		t.Fatal("no preview or blurhash")
	}
}

func near(c interface{ RGBA() (r, g, b, a uint32) }, r, g, b uint32) bool {
	cr, cg, cb, _ := c.RGBA()
	d := func(x, y uint32) bool { return x>>8 > y-40 && x>>8 < y+40 || (y == 0 && x>>8 < 40) }
	return d(cr, r) && d(cg, g) && d(cb, b)
}

// TestOrientations: each of the eight EXIF orientations puts the picture's
// top left quadrant where it belongs.
func TestOrientations(t *testing.T) {
	// Where the top left (red) quadrant of the stored pixels shows.
	want := map[int]image.Point{1: {0, 0}, 2: {1, 0}, 3: {1, 1}, 4: {0, 1}, 5: {0, 0}, 6: {1, 0}, 7: {1, 1}, 8: {0, 1}}
	for o, q := range want {
		src := testimg.Picture(40, 20)
		out := imaging.Orient(src, o)
		w, h := out.Rect.Dx(), out.Rect.Dy()
		if (o >= 5) != (w == 20 && h == 40) {
			t.Fatalf("orientation %d: %dx%d", o, w, h)
		}
		x, y := w/4+q.X*w/2, h/4+q.Y*h/2
		if c := out.RGBAAt(x, y); c.R != 255 || c.G != 0 || c.B != 0 {
			t.Errorf("orientation %d: red quadrant not at %v (%v there)", o, q, c)
		}
	}
}

// TestBomb: an image declaring 100,000 x 100,000 pixels is refused from
// its header, in under 10 ms and without allocating its pixels.
func TestBomb(t *testing.T) {
	p := imaging.New(1)
	for name, b := range map[string][]byte{"png": testimg.PNGBomb(100_000, 100_000), "jpeg": testimg.JPEGBomb(60_000, 60_000)} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		began := time.Now()
		_, err := p.Inspect(b, feed.DefaultMediaMaxPixels)
		took := time.Since(began)
		runtime.ReadMemStats(&after)
		if feed.ErrorCode(err) != feed.ETOOLARGE {
			t.Fatalf("%s bomb of %d bytes: %v, want too_large", name, len(b), err)
		}
		if took > 10*time.Millisecond {
			t.Errorf("%s bomb refused in %v, want under 10ms", name, took)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s bomb allocated %d bytes", name, grew)
		}
	}
}

// TestRefused: HTML, SVG, a polyglot and a damaged image are refused.
func TestRefused(t *testing.T) {
	p := imaging.New(1)
	for name, b := range map[string][]byte{"html": testimg.HTML, "svg": testimg.SVG, "text": []byte("just words"), "empty": nil} {
		if _, err := p.Inspect(b, feed.DefaultMediaMaxPixels); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := process(t, testimg.Polyglot()); feed.ErrorCode(err) != feed.EINVALID {
		t.Errorf("GIF/HTML polyglot: %v, want invalid", err)
	}
	cut := testimg.JPEG(200, 200)
	if _, err := process(t, cut[:len(cut)/2]); feed.ErrorCode(err) != feed.EINVALID {
		t.Errorf("a JPEG cut in half: %v, want invalid", err)
	}
}

// TestFormats: every format taken comes out as JPEG, or PNG when it has
// transparent pixels, within the rendition sizes.
func TestFormats(t *testing.T) {
	webp, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp") // from golang.org/x/image's tests
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		in   []byte
		typ  string
		w, h int
	}{
		"wide jpeg":  {testimg.JPEG(4200, 300), "image/jpeg", feed.DisplaySize, 146}, // halved, then scaled
		"big jpeg":   {testimg.JPEG(2200, 1100), "image/jpeg", feed.DisplaySize, feed.DisplaySize / 2},
		"small jpeg": {testimg.JPEG(100, 60), "image/jpeg", 100, 60},
		"opaque png": {testimg.PNG(50, 50, false), "image/jpeg", 50, 50},
		"alpha png":  {testimg.PNG(50, 50, true), "image/png", 50, 50},
		"gif":        {testimg.GIF(30, 20), "image/jpeg", 30, 20},
		"webp":       {webp, "image/jpeg", 0, 0},
		"tall jpeg":  {testimg.JPEG(200, 2500), "image/jpeg", 164, feed.DisplaySize},
	} {
		r, err := process(t, c.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.ContentType != c.typ || (c.w > 0 && (r.Width != c.w || r.Height != c.h)) {
			t.Errorf("%s: %s %dx%d, want %s %dx%d", name, r.ContentType, r.Width, r.Height, c.typ, c.w, c.h)
		}
		pc, _, err := image.DecodeConfig(bytes.NewReader(r.Preview))
		if err != nil || max(pc.Width, pc.Height) > feed.PreviewSize {
			t.Errorf("%s: preview %+v %v", name, pc, err)
		}
	}
}

// TestWorkers: a full processor makes the next upload wait, and give up
// with EBUSY when its context ends.
func TestWorkers(t *testing.T) {
	p := imaging.New(1)
	b := testimg.JPEG(200, 200)
	info, err := p.Inspect(b, feed.DefaultMediaMaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// One slot, free: a cancelled context may still get it or not; fill
	// it by a Process that blocks on a reader that waits.
	block := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.Process(context.Background(), &waitReader{b: b, wait: block}, int64(len(b)), info)
		done <- err
	}()
	waitFull(t, p, b, info)
	if _, err := p.Process(ctx, bytes.NewReader(b), int64(len(b)), info); feed.ErrorCode(err) != feed.EBUSY {
		t.Fatalf("with every slot taken: %v, want busy", err)
	}
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitFull waits until p's one slot is taken.
func waitFull(t *testing.T, p *imaging.Processor, b []byte, info feed.ImageInfo) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, err := p.Process(ctx, bytes.NewReader(b), int64(len(b)), info)
		cancel()
		if feed.ErrorCode(err) == feed.EBUSY {
			return
		}
	}
	t.Fatal("the slot was never taken")
}

// waitReader is b whose second read from its start (the decoder's: the
// markup scan reads it first, before the slot is taken) waits for wait.
type waitReader struct {
	b      []byte
	wait   chan struct{}
	starts int
}

func (r *waitReader) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 {
		if r.starts++; r.starts == 2 {
			<-r.wait
		}
	}
	return bytes.NewReader(r.b).ReadAt(p, off)
}
