package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/internal/testimg"
)

// loginAs opens the page in b logged in with token.
func (b *browser) loginAs(token string) {
	b.t.Helper()
	eval[bool](b, `localStorage.setItem('feedd.token', `+jsString(token)+`), true`)
	b.do(chromedp.Reload())
	b.until("the home view", `!document.getElementById('home').hidden`)
}

// evalAsync runs a JavaScript expression whose value is a promise, and
// waits for it.
func evalAsync(b *browser, js string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js, chromedp.EvalAwaitPromise)); err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
}

func jsString(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}

// TestBrowserPhotos: an author composes a post with photos in the page
// (a file picked, one dropped and one pasted, one removed, alt text,
// upload progress), publishes it; a follower's page shows it live, then in
// the timeline after a reload, as a grid of previews; the viewer opens on
// a click with the display size and the alt text.
func TestBrowserPhotos(t *testing.T) {
	chromium := testenv.Chromium(t)
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	author, reader := c.login("13800000361"), c.login("13800000362")
	c.want(204, "PUT", "/v1/following/{id}", reader, nil, nil, c.me(author).ID)

	dir := t.TempDir()
	photo := filepath.Join(dir, "photo.jpg")
	if err := os.WriteFile(photo, testimg.Photo(1200, 800, 6), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(dir, "extra.png")
	if err := os.WriteFile(extra, testimg.PNG(300, 200, true), 0o644); err != nil {
		t.Fatal(err)
	}

	rb := newBrowser(t, chromium, s.base)
	rb.loginAs(reader)
	rb.until("the reader's empty timeline", `!document.getElementById('discover').hidden || document.getElementById('timeline-state').textContent !== ''`)

	ab := newBrowser(t, chromium, s.base)
	ab.loginAs(author)
	ab.typeIn(`[data-test=compose-title]`, "A day out")
	ab.typeIn(`[data-test=compose-content]`, "Three pictures.")
	ab.do(chromedp.SetUploadFiles(chromedp.CSS(`[data-test=compose-files]`), []string{photo, extra}))
	ab.until("two uploads", `document.querySelectorAll('[data-test=attachment].uploaded').length === 2`)
	// A picture dropped on the composer and one pasted into it, drawn on
	// a canvas.
	for _, ev := range []string{`new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true})`, `new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true})`} {
		evalAsync(ab, `(async () => {
			const c = document.createElement('canvas');
			c.width = 90; c.height = 60;
			const g = c.getContext('2d');
			g.fillStyle = '#3a6'; g.fillRect(0, 0, 90, 60);
			const blob = await new Promise((r) => c.toBlob(r, 'image/jpeg'));
			const dt = new DataTransfer();
			dt.items.add(new File([blob], 'dropped.jpg', {type: 'image/jpeg'}));
			document.getElementById('compose-content').dispatchEvent(`+ev+`);
			return true;
		})()`)
	}
	ab.until("four uploads", `document.querySelectorAll('[data-test=attachment].uploaded').length === 4`)
	ab.screenshot("compose-photos", 1280, 900)
	// The PNG goes; the photo gets an alt text.
	ab.click(`[data-test=attachment]:nth-child(2) [data-test=attachment-remove]`)
	ab.until("three attachments", `document.querySelectorAll('[data-test=attachment]').length === 3`)
	ab.typeIn(`[data-test=attachment]:first-child [data-test=attachment-alt]`, "A cat on a wall")
	ab.click(`[data-test=publish]`)
	ab.until("the post with its photos in the author's timeline", `(p => !!p && p.querySelectorAll('[data-test=media-thumb]').length === 3)(document.querySelector('[data-test=timeline] [data-test=post]'))`)
	if n := eval[int](ab, `document.querySelectorAll('[data-test=attachment]').length`); n != 0 {
		t.Fatalf("%d attachments left in the composer after publishing", n)
	}

	// The follower: live, then from the timeline after a reload.
	rb.until("the new-posts banner", `(e => !e.hidden)(document.querySelector('[data-test=new-posts]'))`)
	rb.click(`[data-test=new-posts]`)
	for round := range 2 {
		first := `document.querySelector('[data-test=timeline] [data-test=post]')`
		rb.until("three previews loaded", `(p => !!p && [...p.querySelectorAll('[data-test=media-thumb] img')].filter(i => i.complete && i.naturalWidth > 0).length === 3)(`+first+`)`)
		if got := eval[string](rb, first+`.querySelector('[data-test=media-thumb] img').getAttribute('src')`); !strings.HasPrefix(got, "/imgs/p/") {
			t.Fatalf("the preview's src is %q", got)
		}
		if got := eval[string](rb, first+`.querySelector('[data-test=media-thumb] img').alt`); got != "A cat on a wall" {
			t.Fatalf("the preview's alt is %q", got)
		}
		if got := eval[string](rb, first+`.querySelector('[data-test=media-thumb]').style.backgroundColor`); got == "" {
			t.Fatal("no placeholder colour behind the preview")
		}
		rb.click(`[data-test=timeline] [data-test=post] [data-test=media-thumb]`)
		rb.until("the viewer with the display size", `document.querySelector('[data-test=viewer]').open && (i => i.complete && i.naturalWidth === 800 && i.getAttribute('src').startsWith('/imgs/blogs/'))(document.getElementById('viewer-img'))`)
		if got := eval[string](rb, `document.querySelector('[data-test=viewer-alt]').textContent`); got != "A cat on a wall" {
			t.Fatalf("the viewer's alt text is %q", got)
		}
		if round == 0 {
			rb.screenshot("viewer", 1280, 900)
		}
		rb.click(`[data-test=viewer-close]`)
		rb.until("the viewer to close", `!document.querySelector('[data-test=viewer]').open`)
		if round == 0 {
			rb.screenshot("timeline-photos", 390, 844)
			rb.do(chromedp.Reload())
		}
	}
}
