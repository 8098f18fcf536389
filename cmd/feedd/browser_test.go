package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// browser drives feedd's page in a fresh headless Chromium (its own
// temporary profile) and fails the test on any uncaught JavaScript error
// or opened dialog (an alert would mean user text ran as markup).
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	shot string // directory of screenshots
}

// newBrowser starts Chromium (the binary at path) on base's page.
func newBrowser(t *testing.T, path, base string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var ctx context.Context
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			t.Errorf("JavaScript exception at %s:%d: %s %s", d.URL, d.LineNumber+1, d.Text, desc)
		case *page.EventJavascriptDialogOpening:
			t.Errorf("the page opened a %s dialog: %q", ev.Type, ev.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	}))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	shot := os.Getenv("FEED_SCREENSHOTS") // to look at them; else thrown away
	if shot == "" {
		shot = t.TempDir()
	}
	b := &browser{t: t, ctx: ctx, base: base, shot: shot}
	// The first action starts the browser and must run without a deadline
	// (it would end the browser); later ones get one each.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	return b
}

// do runs actions, each within 30 s.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// until waits for a JavaScript condition to hold.
func (b *browser) until(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !eval[bool](b, js) {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting 30s for %s (%s)", what, js)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (b *browser) click(sel string) { b.t.Helper(); b.do(chromedp.Click(chromedp.CSS(sel))) }

func (b *browser) typeIn(sel, text string) {
	b.t.Helper()
	b.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// screenshot saves the viewport at width x height as name.png.
func (b *browser) screenshot(name string, width, height int64) {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(width, height), chromedp.Sleep(150*time.Millisecond))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// postIDs lists the ids of the posts shown in the list sel, top to bottom.
func (b *browser) postIDs(sel string) []int64 {
	b.t.Helper()
	return eval[[]int64](b, `[...document.querySelectorAll('`+sel+` [data-test=post]')].map(e => Number(e.dataset.postId))`)
}

// TestBrowserWalk is the walk of a new user through feedd's page in
// headless Chromium, on the embedded default: log in by code, follow an
// author from #/users/{id}, scroll through the author's 25 posts (each
// shown once, in order), see the "new posts" banner when the author posts
// and that post first after a click, like and unlike, publish from the
// page; markup in posts is shown as text.
func TestBrowserWalk(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
	data := t.TempDir()
	s := startServer(t, "--data", data)
	c := newV1Client(t, s)
	author := c.login("13800000201")
	authorID := c.me(author).ID
	const img = `<img src=x onerror=alert(1)>`
	var posted []apiPost
	for i := 1; i <= 25; i++ {
		title, content := fmt.Sprintf("Post number %d", i), fmt.Sprintf("Body of post %d.\nSecond line.", i)
		switch i {
		case 7:
			title, content = "a < b", "<b>bold</b> & <script>alert(2)</script>"
		case 13:
			content = img
		}
		var p apiPost
		c.want(201, "POST", "/v1/posts", author, map[string]any{"title": title, "content": content}, &p)
		posted = append(posted, p)
	}
	slices.SortFunc(posted, func(x, y apiPost) int {
		if x.score() != y.score() {
			return int(y.score() - x.score())
		}
		return int(y.ID - x.ID)
	})
	want := make([]int64, len(posted))
	for i, p := range posted {
		want[i] = p.ID
	}

	b := newBrowser(t, chromium, s.base)
	const phone = 13800000202
	b.until("the login form", `!document.getElementById('login').hidden`)
	b.screenshot("phone-login", 390, 844)
	b.typeIn(`[data-test=phone]`, fmt.Sprint(phone))
	b.click(`[data-test=send-code]`)
	rec := s.logs.wait(t, "login code", map[string]string{"phone": fmt.Sprint(phone)})
	b.typeIn(`[data-test=code]`, rec["code"].(string))
	b.click(`[data-test=login]`)
	b.until("the empty timeline's advice", `!document.getElementById('discover').hidden`)
	if txt := eval[string](b, `document.getElementById('discover').innerText`); !strings.Contains(txt, "Follow people") {
		t.Fatalf("empty timeline says %q", txt)
	}
	b.screenshot("phone-empty", 390, 844)
	reader := eval[string](b, `localStorage.getItem('feedd.token')`)
	readerID := c.me(reader).ID

	// Follow the author from their page, which lists their posts.
	b.do(chromedp.Navigate(fmt.Sprintf("%s/#/users/%d", s.base, authorID)))
	b.until("the follow button", `!document.getElementById('user-actions').hidden && document.querySelector('[data-test=follow]').textContent === 'Follow'`)
	b.until("the author's first posts", `document.querySelectorAll('#user-posts [data-test=post]').length >= 20`)
	b.click(`[data-test=follow]`)
	b.until("the follow to land", `document.querySelector('[data-test=follow]').textContent === 'Unfollow'`)
	var prof apiProfile
	c.want(200, "GET", "/v1/users/{id}", reader, nil, &prof, authorID)
	if !prof.FollowedByMe {
		t.Fatal("the page's Follow did not follow")
	}
	b.screenshot("phone-user", 390, 844)
	b.screenshot("desktop-user", 1280, 900)
	waitFor(t, "the backfill of the author's posts", func() bool { return len(c.timeline(reader, 100)) == 25 })

	// Home: scroll to the end; every post once, in feed order.
	b.click(`nav a[href="#/"]`)
	b.until("the first page", `document.querySelectorAll('[data-test=timeline] [data-test=post]').length > 0`)
	for i := 0; !eval[bool](b, `document.getElementById('timeline-state').classList.contains('end')`); i++ {
		if i > 200 {
			t.Fatal("the timeline did not reach its end")
		}
		eval[bool](b, `window.scrollTo(0, document.body.scrollHeight), true`)
		time.Sleep(50 * time.Millisecond)
	}
	if got := b.postIDs(`[data-test=timeline]`); !slices.Equal(got, want) {
		t.Fatalf("timeline shows %v, want the author's posts %v", got, want)
	}

	// Markup is text: no element inside any title or content, the exact text shown.
	if n := eval[int](b, `document.querySelectorAll('.post .title *, .post .content *').length`); n != 0 {
		t.Fatalf("%d elements inside post titles or contents", n)
	}
	if got := eval[string](b, `[...document.querySelectorAll('.post .content')].map(e => e.textContent).find(t => t.startsWith('<img')) || ''`); got != img {
		t.Fatalf("the post with an <img> tag shows %q", got)
	}
	if got := eval[string](b, `[...document.querySelectorAll('.post .title')].map(e => e.textContent).find(t => t.includes('<')) || ''`); got != "a < b" {
		t.Fatalf("the title with '<' shows %q", got)
	}

	// A new post of the author: the banner, then the post first.
	eval[bool](b, `window.scrollTo(0, 0), true`)
	var fresh apiPost
	c.want(201, "POST", "/v1/posts", author, map[string]any{"title": "Fresh news", "content": "Just posted."}, &fresh)
	b.until("the new-posts banner", `(e => !e.hidden && e.textContent === '1 new post')(document.querySelector('[data-test=new-posts]'))`)
	b.screenshot("phone-banner", 390, 844)
	b.click(`[data-test=new-posts]`)
	b.until("the banner to go", `document.querySelector('[data-test=new-posts]').hidden`)
	if got := b.postIDs(`[data-test=timeline]`); len(got) != 26 || got[0] != fresh.ID || !slices.Equal(got[1:], want) {
		t.Fatalf("after the banner the timeline is %v, want %d then %v", got, fresh.ID, want)
	}
	if y := eval[float64](b, `window.scrollY`); y != 0 {
		t.Fatalf("the banner left the page scrolled at %v", y)
	}

	// Like and unlike the first post: the count follows, and the server agrees.
	first := `[data-test=timeline] [data-test=post]:first-child `
	likeCount := func() int {
		var p apiPost
		c.want(200, "GET", "/v1/posts/{id}", reader, nil, &p, fresh.ID)
		return p.LikeCount
	}
	b.until("the count 0", `document.querySelector('`+first+`[data-test=like-count]').textContent === '0'`)
	b.click(first + `[data-test=like]`)
	b.until("the count 1", `document.querySelector('`+first+`[data-test=like-count]').textContent === '1'`)
	waitFor(t, "the like on the server", func() bool { return likeCount() == 1 })
	b.screenshot("phone-liked", 390, 844)
	b.click(first + `[data-test=like]`)
	b.until("the count back to 0", `document.querySelector('`+first+`[data-test=like-count]').textContent === '0'`)
	waitFor(t, "the unlike on the server", func() bool { return likeCount() == 0 })

	// Publish from the page: the post is at the top, its markup as text.
	b.typeIn(`[data-test=compose-title]`, "Hello from the page")
	b.typeIn(`[data-test=compose-content]`, "composed <i>here</i>")
	b.click(`[data-test=publish]`)
	b.until("the composed post on top", `document.querySelector('`+first+`.title').textContent === 'Hello from the page'`)
	got := b.postIDs(`[data-test=timeline]`)
	var mine apiPage[apiPost]
	c.want(200, "GET", "/v1/users/{id}/posts", reader, nil, &mine, readerID)
	if len(mine.Data) != 1 || len(got) != 27 || got[0] != mine.Data[0].ID || mine.Data[0].Content != "composed <i>here</i>" {
		t.Fatalf("after publishing, the page shows %v; the server has %+v", got, mine.Data)
	}
	if txt := eval[string](b, `document.querySelector('`+first+`.content').innerHTML`); txt != "composed &lt;i&gt;here&lt;/i&gt;" {
		t.Fatalf("the composed content is rendered as %q", txt)
	}
	time.Sleep(300 * time.Millisecond) // the stream's copy of the own post must not double it
	if got := b.postIDs(`[data-test=timeline]`); len(got) != 27 {
		t.Fatalf("after the stream caught up the timeline has %d posts, want 27", len(got))
	}
	b.screenshot("desktop-home", 1280, 900)
	b.screenshot("phone-home", 390, 844)

	// A restart ends the stream; the page reconnects with Last-Event-ID and
	// gets the posts published meanwhile (replayed, or live if it was
	// quicker than they), each once, behind the banner.
	s.stop()
	s = startServer(t, "--data", data, "--addr", strings.TrimPrefix(s.base, "http://"))
	c.s = s
	var missed []int64
	for i := 1; i <= 5; i++ {
		var p apiPost
		c.want(201, "POST", "/v1/posts", author, map[string]any{"title": fmt.Sprintf("While you were away %d", i), "content": "."}, &p)
		missed = append([]int64{p.ID}, missed...)
	}
	waitFor(t, "the missed posts in the reader's inbox", func() bool { return len(c.timeline(reader, 100)) == 32 })
	b.until("the banner for the missed posts", `document.querySelector('[data-test=new-posts]').textContent === '5 new posts'`)
	b.click(`[data-test=new-posts]`)
	if got := b.postIDs(`[data-test=timeline]`); len(got) != 32 || !slices.Equal(got[:5], missed) {
		t.Fatalf("after the reconnect the timeline is %v, want %v first and 32 posts", got, missed)
	}

	// Mute, block, unfollow from the author's page, reached by the author's
	// name on a post; the server agrees with each button.
	listed := func(path string) bool {
		var page apiPage[apiUser]
		c.want(200, "GET", path, reader, nil, &page)
		return slices.ContainsFunc(page.Data, func(u apiUser) bool { return u.ID == authorID })
	}
	following := func() bool {
		var p apiProfile
		c.want(200, "GET", "/v1/users/{id}", reader, nil, &p, authorID)
		return p.FollowedByMe
	}
	button := func(name, label string) string {
		return fmt.Sprintf("!document.getElementById('user-actions').hidden && document.querySelector('[data-test=%s]').textContent === '%s'", name, label)
	}
	b.click(`[data-test=timeline] [data-test=post]:nth-child(2) .author`)
	b.until("the author's page", button("follow", "Unfollow")+" && "+button("mute", "Mute")+" && "+button("block", "Block"))
	b.click(`[data-test=mute]`)
	b.until("muted", button("mute", "Unmute"))
	if !listed("/v1/mutes") {
		t.Fatal("the page's Mute did not mute")
	}
	b.click(`[data-test=mute]`)
	b.until("unmuted", button("mute", "Mute"))
	if listed("/v1/mutes") {
		t.Fatal("the page's Unmute did not unmute")
	}
	b.click(`[data-test=block]`)
	b.until("blocked", button("block", "Unblock")+" && "+button("follow", "Follow")+" && document.querySelector('[data-test=follow]').disabled")
	if !listed("/v1/blocks") || following() {
		t.Fatal("the page's Block did not block and unfollow")
	}
	b.click(`[data-test=block]`)
	b.until("unblocked", button("block", "Block")+" && !document.querySelector('[data-test=follow]').disabled")
	b.click(`[data-test=follow]`)
	b.until("followed again", button("follow", "Unfollow"))
	if listed("/v1/blocks") || !following() {
		t.Fatal("Unblock then Follow did not follow")
	}
	b.click(`[data-test=follow]`)
	b.until("unfollowed", button("follow", "Follow"))
	if following() {
		t.Fatal("the page's Unfollow did not unfollow")
	}

	// Log out: back to the login form, the session is gone.
	b.click(`[data-test=logout]`)
	b.until("the login form", `!document.getElementById('login').hidden`)
	if tok := eval[string](b, `localStorage.getItem('feedd.token') || ''`); tok != "" {
		t.Fatal("the token is still stored after logout")
	}
	c.refused(401, "unauthorized", "GET", "/v1/me", reader, nil)
}

// TestPageServed: the page at exactly / and its assets under /assets/,
// with their types and a policy that allows nothing from elsewhere; every
// other unknown path keeps the APIs' JSON 404s. On the embedded default and
// on PostgreSQL + Redis with no workers (an API process).
func TestPageServed(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) { testPageServed(t, startServer(t, "--data", t.TempDir())) })
	t.Run("production", func(t *testing.T) {
		testPageServed(t, startServer(t, append(singleNode(t).args, "--workers", "0")...))
	})
}

func testPageServed(t *testing.T, s *server) {
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	for path, typ := range map[string]string{"/": "text/html", "/assets/app.js": "text/javascript", "/assets/api.js": "text/javascript",
		"/assets/stream.js": "text/javascript", "/assets/style.css": "text/css"} {
		resp, body := get(path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) || len(body) == 0 {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Fatalf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "//cdn") {
			t.Fatalf("GET %s refers to another origin", path)
		}
		if again, _ := get(path, "If-None-Match", resp.Header.Get("ETag")); again.StatusCode != 304 {
			t.Fatalf("GET %s with its ETag: %d, want 304", path, again.StatusCode)
		}
	}
	for _, path := range []string{"/nope", "/user/nope/x", "/blog/of/nothing", "/index.html", "/assets", "/assets/", "/assets/nope.js", "/assets/x/app.js"} {
		if r := s.do("GET", path, "", nil); r.Status != 404 || r.Success {
			t.Fatalf("GET %s: %d %s, want the compatible JSON 404", path, r.Status, r.Raw)
		}
	}
	c := newV1Client(t, s)
	c.refused(404, "not_found", "GET", "/v1/assets/app.js", "", nil)
}
