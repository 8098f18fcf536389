package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// pushStub replaces, before the page's scripts run, what headless Chromium
// cannot do here: it has no push service to subscribe with, so
// pushManager.subscribe answers a subscription at the test's push service
// (its keys are the test's browser keys), and Notification.requestPermission
// grants, counting its calls: the page must ask only on a click. The
// service worker itself is registered for real.
const pushStub = `(() => {
  window.__asked = 0;
  window.__sub = null;
  Notification.requestPermission = () => { window.__asked++; return Promise.resolve('granted'); };
  Object.defineProperty(Notification, 'permission', { get: () => window.__asked ? 'granted' : 'default' });
  const sub = (opts) => ({
    endpoint: %q, options: opts,
    toJSON: () => ({ endpoint: %q, expirationTime: null, keys: { p256dh: %q, auth: %q } }),
    unsubscribe: () => { window.__sub = null; return Promise.resolve(true); },
  });
  PushManager.prototype.subscribe = function (opts) {
    window.__sub = sub(opts);
    window.__key = typeof opts.applicationServerKey === 'string' ? opts.applicationServerKey : '';
    return Promise.resolve(window.__sub);
  };
  PushManager.prototype.getSubscription = function () { return Promise.resolve(window.__sub); };
})()`

// TestBrowserMarkersAndPush walks feedd's page in headless Chromium: the
// timeline opens at the post another device marked, with "24 new since
// you last read"; the banner brings the newer posts and the marker moves
// forward as the reader is at the top; the service worker is registered
// at load, permission is asked only on the click on "Notify me", and the
// subscription the page hands over gets the next like, pushed and
// decrypted.
func TestBrowserMarkersAndPush(t *testing.T) {
	chromium := testenv.Chromium(t)
	srv, allow := pushServer(t)
	s := startServer(t, "--data", t.TempDir(), allow)
	c := newV1Client(t, s)
	a, bo := c.login("13800000951"), c.login("13800000952")
	c.want(204, "PUT", "/v1/following/{id}", a, nil, nil, c.me(bo).ID)
	var posts []apiPost
	for i := range 40 {
		posts = append(posts, c.publish(bo, fmt.Sprintf("B's post %d", i)))
	}
	c.waitTimeline(a, posts[39].ID)
	c.want(200, "POST", "/v1/markers", a, map[string]any{"timeline": map[string]any{"last_read_id": posts[15].ID}}, nil)

	b := newBrowser(t, chromium, s.base)
	stub := fmt.Sprintf(pushStub, srv.Endpoint(), srv.Endpoint(), srv.Browser.P256dh(), srv.Browser.AuthSecret())
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: stub}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, a)), chromedp.Navigate(s.base+"/"))
	b.until("the timeline opened at the marked post, with the since banner", fmt.Sprintf(`(() => {
		const el = document.querySelector('#timeline [data-post-id="%d"]'), since = document.querySelector('[data-test=since]');
		if (!el || since.hidden) return false;
		const r = el.getBoundingClientRect();
		return r.top >= 0 && r.top < 200 })()`, posts[15].ID))
	if got := eval[string](b, `document.querySelector('[data-test=since]').textContent`); got != "24 new since you last read" {
		t.Fatalf("banner %q, want \"24 new since you last read\"", got)
	}
	b.screenshot("marker-opened", 390, 844)

	b.click(`[data-test=since]`)
	b.until("the newer posts", fmt.Sprintf(`!!document.querySelector('#timeline [data-post-id="%d"]') && document.querySelector('[data-test=since]').hidden`, posts[39].ID))
	b.do(chromedp.Evaluate[chromedp.Void](`scrollTo({ top: 0 }); dispatchEvent(new Event('scroll'))`))
	waitFor(t, "the marker to move to the newest post", func() bool {
		var ms apiMarkers
		c.want(200, "GET", "/v1/markers", a, nil, &ms)
		return ms.Timeline != nil && string(ms.Timeline.LastReadID) == fmt.Sprint(posts[39].ID)
	})

	// Web Push: the worker registered at load; no permission asked before
	// the click.
	b.do(chromedp.Evaluate[chromedp.Void](`navigator.serviceWorker.getRegistration('/assets/sw.js').then((r) => { window.__reg = !!r && !!r.active || !!(r && (r.installing || r.waiting)); })`))
	b.until("the service worker registered", `window.__reg === true`)
	b.do(chromedp.Navigate(s.base + "/#/notifications"))
	b.until("the Notify me button", `!document.querySelector('[data-test=push-toggle]').hidden`)
	if n := eval[int](b, `window.__asked`); n != 0 {
		t.Fatalf("permission asked %d times before any click", n)
	}
	b.click(`[data-test=push-toggle]`)
	b.until("notifications on", `document.querySelector('[data-test=push-toggle]').textContent === 'Notifications on'`)
	var key struct {
		PublicKey string `json:"public_key"`
	}
	c.want(200, "GET", "/v1/push/key", a, nil, &key)
	if n, k := eval[int](b, `window.__asked`), eval[string](b, `window.__key`); n != 1 || k != key.PublicKey {
		t.Fatalf("permission asked %d times, subscribed with key %q; want once, with %q", n, k, key.PublicKey)
	}
	srv.VAPIDKey = key.PublicKey
	var subs apiPage[apiPushSubscription]
	c.want(200, "GET", "/v1/push/subscriptions", a, nil, &subs)
	if len(subs.Data) != 1 || subs.Data[0].Endpoint != srv.Endpoint() {
		t.Fatalf("the page's subscription: %+v, want one, at the test's push service", subs.Data)
	}
	b.screenshot("push-on", 390, 844)
	// The page leaves the notifications: open, it would show the like as
	// it comes and mark it read, and a notification read before its push
	// job runs is not pushed (docs/API.md, "Web Push").
	b.do(chromedp.Navigate("about:blank"))
	p := c.publish(a, "Mine")
	c.want(204, "PUT", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
	_, payload := message(t, srv, 1, 30*time.Second)
	if payload.PostID != p.ID || !strings.HasSuffix(payload.Title, " liked your post") {
		t.Fatalf("pushed %+v, want the like of post %d", payload, p.ID)
	}
}
