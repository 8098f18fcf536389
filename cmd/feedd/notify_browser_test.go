package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBrowserNotifications walks the notifications of feedd's page in
// headless Chromium, on the embedded default: A publishes; B and C like
// the post; A's bell shows 1 within 2 s (from the live stream: the page
// does not poll); the notifications view shows one entry naming C and B;
// B unlikes and the entry names C alone; D follows A and a follow entry
// appears; the count is 0 after viewing; and the home page's For you
// switch shows the ranked order.
func TestBrowserNotifications(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	a, bo, cy, di := c.login("13800000301"), c.login("13800000302"), c.login("13800000303"), c.login("13800000304")
	aID := c.me(a).ID
	bName, cName, dName := c.me(bo).NickName, c.me(cy).NickName, c.me(di).NickName
	// A's timeline: A follows B and C, who post; A has liked C's older
	// posts, so C's two newer ones (affinity) rank above B's four newest
	// in the ranked order, and below them in the chronological one.
	c.want(204, "PUT", "/v1/following/{id}", a, nil, nil, c.me(bo).ID)
	c.want(204, "PUT", "/v1/following/{id}", a, nil, nil, c.me(cy).ID)
	for i := range 4 {
		cp := c.publish(cy, fmt.Sprintf("C's post %d", i))
		c.want(204, "PUT", "/v1/posts/{id}/like", a, nil, nil, cp.ID)
	}
	for i := range 2 {
		c.publish(cy, fmt.Sprintf("C's new post %d", i))
	}
	for i := range 4 {
		c.publish(bo, fmt.Sprintf("B's post %d", i))
	}
	p := c.publish(a, "Title")

	b := newBrowser(t, chromium, s.base)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, a)), chromedp.Navigate(s.base+"/"))
	b.until("A's timeline", `document.querySelectorAll('#timeline [data-test=post]').length >= 11`)
	if n := eval[string](b, `document.querySelector('[data-test=unread-count]').hidden ? 'hidden' : document.querySelector('[data-test=unread-count]').textContent`); n != "hidden" {
		t.Fatalf("the bell shows %q before any notification, want no count", n)
	}

	c.want(204, "PUT", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
	liked := time.Now()
	c.want(204, "PUT", "/v1/posts/{id}/like", cy, nil, nil, p.ID)
	bellJS := `!document.querySelector('[data-test=unread-count]').hidden && document.querySelector('[data-test=unread-count]').textContent === '1'`
	for !eval[bool](b, bellJS) {
		if time.Since(liked) > 2*time.Second {
			t.Fatalf("the bell does not show 1 within 2 s of the likes (it shows %q)", eval[string](b, `document.querySelector('[data-test=unread-count]').textContent`))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the bell showed 1 %v after the first like", time.Since(liked).Round(time.Millisecond))

	entries := func() []string {
		return eval[[]string](b, `[...document.querySelectorAll('[data-test=notifications] [data-test=notification]')].map(e => e.innerText)`)
	}
	b.click(`[data-test=bell]`)
	b.until("the notifications view", `!document.getElementById('notifications').hidden && document.querySelectorAll('[data-test=notification]').length > 0`)
	want := fmt.Sprintf("%s and %s liked “Title”", cName, bName)
	if got := entries(); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("notifications %q, want one entry %q", got, want)
	}
	b.until("the count to clear once viewed", `document.querySelector('[data-test=unread-count]').hidden`)
	b.screenshot("notifications", 390, 844)

	c.want(204, "DELETE", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
	alone := fmt.Sprintf("%s liked “Title”", cName)
	b.until("the entry to name C alone", fmt.Sprintf(`(() => { const e = [...document.querySelectorAll('[data-test=notification]')];
		return e.length === 1 && e[0].innerText.includes(%q) && !e[0].innerText.includes(%q) })()`, alone, bName))

	c.want(204, "PUT", "/v1/following/{id}", di, nil, nil, aID)
	follow := fmt.Sprintf("%s followed you", dName)
	b.until("the follow entry", fmt.Sprintf(`(() => { const e = [...document.querySelectorAll('[data-test=notification]')];
		return e.length === 2 && e[0].innerText.includes(%q) && e[0].dataset.kind === 'follow' })()`, follow))
	b.until("the count to stay 0 while viewing", `document.querySelector('[data-test=unread-count]').hidden`)
	waitFor(t, "the open view to mark the follow read", func() bool { return c.unread(a) == 0 })

	// Home: Latest, then For you.
	b.do(chromedp.Navigate(s.base + "/#/"))
	b.until("the timeline", `!document.getElementById('home').hidden && document.querySelectorAll('#timeline [data-test=post]').length >= 11`)
	chrono := postIDs(c.timeline(a, 100))
	if got := b.postIDs("#timeline"); !slices.Equal(got, chrono) {
		t.Fatalf("Latest shows %v, want %v", got, chrono)
	}
	b.click(`[data-test=order-ranked]`)
	b.until("For you pressed", `document.querySelector('[data-test=order-ranked]').getAttribute('aria-pressed') === 'true'`)
	var ranked []int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		var page apiPage[apiPost]
		c.want(200, "GET", "/v1/timeline?order=ranked&limit=20", a, nil, &page)
		ranked = postIDs(page.Data)
		if got := b.postIDs("#timeline"); slices.Equal(got, ranked) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("For you shows %v, want the ranked order %v", got, ranked)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if slices.Equal(ranked, chrono) {
		t.Fatalf("the ranked order is the chronological one (%v): the switch shows nothing", ranked)
	}
	b.click(`[data-test=order-latest]`)
	b.until("Latest again", fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('#timeline [data-test=post]')].map(e => Number(e.dataset.postId))) === %q`,
		strings.ReplaceAll(fmt.Sprint(chrono), " ", ",")))
}

// TestBrowserNotificationChurn: B, a distinct client (127.0.0.2), likes
// and unlikes A's post 25 times, within the renotify window. A's page,
// following its stream, shows the bell right after every step: 1 after
// each like (the group, unread, shown again as it was), nothing after each
// unlike, and the same as the unread count at the end. Then, with the
// notifications view open, five more rounds: the entry goes with each
// unlike and comes back with each like.
func TestBrowserNotificationChurn(t *testing.T) {
	chromium := testenv.Chromium(t)
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	a := c.login("13800000321")
	bc := s.from("127.0.0.2").v1()
	bo := bc.login("13800000322")
	p := c.publish(a, "churned")

	b := newBrowser(t, chromium, s.base)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, a)), chromedp.Navigate(s.base+"/"))
	b.until("A's timeline", `document.querySelectorAll('#timeline [data-test=post]').length >= 1`)
	bell := func(n int) string {
		if n == 0 {
			return `document.querySelector('[data-test=unread-count]').hidden`
		}
		return fmt.Sprintf(`!document.querySelector('[data-test=unread-count]').hidden && document.querySelector('[data-test=unread-count]').textContent === '%d'`, n)
	}
	// The page's stream is open once a first event reaches it.
	bc.want(204, "PUT", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
	b.until("the bell to show the first like", bell(1))
	for i := range 25 {
		bc.want(204, "DELETE", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
		b.until(fmt.Sprintf("round %d: the bell to clear after the unlike", i+1), bell(0))
		bc.want(204, "PUT", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
		b.until(fmt.Sprintf("round %d: the bell to show the like given back", i+1), bell(1))
	}
	if n := c.unread(a); n != 1 {
		t.Fatalf("unread count %d after the churn, want 1 (the bell shows 1)", n)
	}

	b.click(`[data-test=bell]`)
	entry := `document.querySelectorAll('[data-test=notifications] [data-test=notification][data-kind=like]').length`
	b.until("the like's entry", entry+` === 1`)
	for i := range 5 {
		bc.want(204, "DELETE", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
		b.until(fmt.Sprintf("view round %d: the entry to go", i+1), entry+` === 0`)
		bc.want(204, "PUT", "/v1/posts/{id}/like", bo, nil, nil, p.ID)
		b.until(fmt.Sprintf("view round %d: the entry to come back", i+1), entry+` === 1`)
	}
	b.until("the bell to stay clear while viewing", bell(0))
}
