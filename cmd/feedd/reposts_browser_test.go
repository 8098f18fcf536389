package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBrowserReposts walks reposts and quotes in headless Chromium, on the
// embedded default, as reader R who follows B and C but not the author A:
// A's post, reposted by B and C, is in R's timeline once, "reposted by B
// and 1 other"; R reposts it from the page (the count moves, the button is
// pressed; the server agrees) and undoes it; R quotes it with the
// composer and the quote lands on top, the original embedded (its markup
// as text); A's notifications read "C and B reposted “Title”" and "R
// quoted “Title”"; once A deletes the post, the quote shows a tombstone.
func TestBrowserReposts(t *testing.T) {
	chromium := testenv.Chromium(t)
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	a, bo, cy, r := c.login("13800000801"), c.login("13800000802"), c.login("13800000803"), c.login("13800000804")
	bName, rName := c.me(bo).NickName, c.me(r).NickName
	for _, u := range []string{bo, cy} {
		c.want(204, "PUT", "/v1/following/{id}", r, nil, nil, c.me(u).ID)
	}
	var p apiPost
	c.want(201, "POST", "/v1/posts", a, map[string]any{"title": "Title", "content": "Look <i>here</i>"}, &p)
	c.want(204, "PUT", "/v1/posts/{id}/repost", bo, nil, nil, p.ID)
	c.want(204, "PUT", "/v1/posts/{id}/repost", cy, nil, nil, p.ID)
	c.waitTimeline(r, p.ID)

	b := newBrowser(t, chromium, s.base)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, r)), chromedp.Navigate(s.base+"/"))
	card := fmt.Sprintf(`document.querySelector('#timeline [data-post-id="%d"]')`, p.ID)
	b.until("the reposted post", card+` !== null`)
	if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll('#timeline [data-post-id="%d"]').length`, p.ID)); n != 1 {
		t.Fatalf("the post is %d times in the timeline", n)
	}
	if got, want := eval[string](b, card+`.querySelector('[data-test=reposted-by]').textContent`), "reposted by "+bName+" and 1 other"; got != want {
		t.Fatalf("reposted-by line %q, want %q", got, want)
	}
	if n := eval[int](b, card+`.querySelectorAll('.content *').length`); n != 0 {
		t.Fatal("the post's markup ran")
	}
	b.screenshot("reposted", 390, 844)

	// Repost and undo from the page.
	button := card + `.querySelector('[data-test=repost]')`
	b.do(chromedp.Evaluate[chromedp.Void](button + `.click()`))
	b.until("the repost pressed", button+`.getAttribute('aria-pressed') === 'true' && `+card+`.querySelector('[data-test=repost-count]').textContent === '3' && !`+button+`.disabled`)
	var got apiPost
	c.want(200, "GET", "/v1/posts/{id}", r, nil, &got, p.ID)
	if !got.RepostedByMe || got.RepostCount != 3 {
		t.Fatalf("after the page's repost: reposted_by_me %v, %d reposts", got.RepostedByMe, got.RepostCount)
	}
	b.do(chromedp.Evaluate[chromedp.Void](button + `.click()`))
	b.until("the repost undone", button+`.getAttribute('aria-pressed') === 'false' && `+card+`.querySelector('[data-test=repost-count]').textContent === '2' && !`+button+`.disabled`)
	c.want(200, "GET", "/v1/posts/{id}", r, nil, &got, p.ID)
	if got.RepostedByMe || got.RepostCount != 2 {
		t.Fatalf("after the page's undo: reposted_by_me %v, %d reposts", got.RepostedByMe, got.RepostCount)
	}

	// Quote with the composer: the quote lands on top, the original in it.
	b.do(chromedp.Evaluate[chromedp.Void](card + `.querySelector('[data-test=quote]').click()`))
	b.until("the quote composer", card+`.querySelector('[data-test=quote-form]') !== null`)
	b.typeIn(`[data-test=quote-title]`, "My take")
	b.typeIn(`[data-test=quote-content]`, "So true")
	b.click(`[data-test=quote-send]`)
	first := `document.querySelector('#timeline [data-test=post]')`
	b.until("the quote on top", first+`.querySelector('.title').textContent === 'My take' && `+first+`.querySelector('[data-test=quoted]') !== null`)
	quoted := first + `.querySelector('[data-test=quoted]')`
	if txt := eval[string](b, quoted+`.textContent`); !strings.Contains(txt, "Title") || !strings.Contains(txt, "Look <i>here</i>") {
		t.Fatalf("embedded original %q", txt)
	}
	if n := eval[int](b, quoted+`.querySelectorAll('i').length`); n != 0 {
		t.Fatal("the quoted post's markup ran")
	}
	b.screenshot("quote", 390, 844)

	// A's notifications, as sentences.
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, a)), chromedp.Navigate(s.base+"/#/notifications"))
	b.until("A's notifications", `document.querySelectorAll('[data-test=notifications] [data-test=notification]').length === 2`)
	entries := eval[string](b, `document.querySelector('[data-test=notifications]').innerText`)
	for _, want := range []string{" and " + bName + " reposted “Title”", rName + " quoted “Title”"} {
		if !strings.Contains(entries, want) {
			t.Fatalf("notifications %q, want %q", entries, want)
		}
	}

	// Deleted: R's page shows the tombstone in the quote.
	c.want(204, "DELETE", "/v1/posts/{id}", a, nil, nil, p.ID)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, r)), chromedp.Navigate(s.base+"/#/"), chromedp.Reload())
	b.until("the tombstone", `(() => { const q = document.querySelector('#timeline [data-test=quoted]'); return q !== null && q.dataset.state === 'deleted' && q.textContent === 'This post was deleted.' })()`)
	if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll('#timeline [data-post-id="%d"]').length`, p.ID)); n != 0 {
		t.Fatal("the deleted post is still in the timeline")
	}
}
