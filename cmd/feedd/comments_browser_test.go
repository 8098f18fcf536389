package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedd/feedd/internal/testenv"
)

// TestBrowserComments walks a post's comments in headless Chromium, on the
// embedded default, as the post's author A: B comments and A's bell (an
// SVG, no emoji) shows 1 from the live stream; the notification reads "B
// commented on “Title”" with a relative time and the full time on hover;
// it opens the post with B's comment (its markup shown as text); A replies,
// likes B's comment, loads the replies beyond the first two, writes a
// comment of their own, deletes a reply; the timeline's post links to its
// comments with their count.
func TestBrowserComments(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
	s := startServer(t, "--data", t.TempDir())
	c := newV1Client(t, s)
	a, bo, cy := c.login("13800000701"), c.login("13800000702"), c.login("13800000703")
	bName := c.me(bo).NickName
	p := c.publish(a, "Title")

	b := newBrowser(t, chromium, s.base)
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('feedd.token', %q)`, a)), chromedp.Navigate(s.base+"/"))
	b.until("A's timeline", `document.querySelectorAll('#timeline [data-test=post]').length === 1`)
	if ok := eval[bool](b, `!!document.querySelector('[data-test=bell] svg') && !/\p{Extended_Pictographic}/u.test(document.querySelector('[data-test=bell]').textContent)`); !ok {
		t.Fatal("the bell is not an SVG icon, or holds an emoji")
	}

	bc := c.addComment(bo, p.ID, "Nice post <b>!</b>", 0)
	commented := time.Now()
	b.until("the bell to show 1", `!document.querySelector('[data-test=unread-count]').hidden && document.querySelector('[data-test=unread-count]').textContent === '1'`)
	t.Logf("the bell showed 1 %v after the comment", time.Since(commented).Round(time.Millisecond))
	b.click(`[data-test=bell]`)
	b.until("the notification", `document.querySelectorAll('[data-test=notifications] [data-test=notification]').length === 1`)
	entry := eval[string](b, `document.querySelector('[data-test=notification]').innerText`)
	if want := bName + " commented on “Title”"; !strings.Contains(entry, want) {
		t.Fatalf("notification %q, want %q", entry, want)
	}
	when := eval[[]string](b, `(() => { const e = document.querySelector('[data-test=notification-time]'); return [e.textContent, e.title] })()`)
	if !regexp.MustCompile(`^(now|\d+m)$`).MatchString(when[0]) || len(when[1]) < 10 {
		t.Fatalf("notification time %q (hover %q), want a relative time with the full one on hover", when[0], when[1])
	}
	b.screenshot("comment-notification", 390, 844)

	b.click(`[data-test=notification]`)
	b.until("the post's page", fmt.Sprintf(`location.hash === '#/posts/%d' && !document.getElementById('post').hidden && document.querySelectorAll('[data-test=comments] [data-test=comment]').length === 1`, p.ID))
	comment := fmt.Sprintf(`document.querySelector('[data-test=comments] [data-comment-id="%d"]')`, bc.ID)
	if got := eval[string](b, comment+`.querySelector('[data-test=comment-text]').textContent`); got != "Nice post <b>!</b>" {
		t.Fatalf("comment text %q", got)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-test=comment-text] *').length`); n != 0 {
		t.Fatalf("%d elements inside comment texts: markup ran", n)
	}

	// A reply from the page.
	b.click(fmt.Sprintf(`[data-comment-id="%d"] [data-test=comment-reply]`, bc.ID))
	b.until("the reply form", `!document.getElementById('replying').hidden`)
	b.typeIn(`[data-test=comment-input]`, "Thanks!")
	b.click(`[data-test=comment-send]`)
	b.until("the reply under B's comment", comment+`.querySelectorAll('.replies [data-test=comment]').length === 1 && `+
		comment+`.querySelector('.replies [data-test=comment-text]').textContent === 'Thanks!'`)
	var got apiComment
	c.want(200, "GET", "/v1/comments/{id}", a, nil, &got, bc.ID)
	if got.ReplyCount != 1 {
		t.Fatalf("B's comment has %d replies, want 1", got.ReplyCount)
	}

	// A like from the page.
	like := comment + `.querySelector(':scope > footer [data-test=comment-like]')`
	b.do(chromedp.Evaluate[chromedp.Void](like + `.click()`))
	b.until("the like pressed", like+`.getAttribute('aria-pressed') === 'true'`)
	waitFor(t, "the like stored", func() bool {
		c.want(200, "GET", "/v1/comments/{id}", a, nil, &got, bc.ID)
		return got.LikeCount == 1 && got.LikedByMe
	})

	// More replies than a thread shows at first: loaded on demand.
	var cReplies []apiComment
	for i := range 3 {
		cReplies = append(cReplies, c.addComment(cy, p.ID, fmt.Sprintf("C's reply %d", i), bc.ID))
	}
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/'; location.reload()`))
	b.until("home", `!!document.getElementById('home') && !document.getElementById('home').hidden`)
	link := fmt.Sprintf(`document.querySelector('[data-post-id="%d"] [data-test=post-comments]')`, p.ID)
	b.until("the post's comment count", `!!(`+link+` && `+link+`.textContent.trim() === '5')`)
	b.do(chromedp.Evaluate[chromedp.Void](link + `.click()`))
	b.until("the thread with two replies and more to load", `!!(`+comment+` && `+comment+`.querySelectorAll('.replies [data-test=comment]').length === 2 && !`+
		comment+`.querySelector('[data-test=replies-more]').hidden)`)
	if txt := eval[string](b, comment+`.querySelector('[data-test=replies-more]').textContent`); txt != "View 2 more replies" {
		t.Fatalf("the more button says %q", txt)
	}
	b.click(fmt.Sprintf(`[data-comment-id="%d"] [data-test=replies-more]`, bc.ID))
	b.until("all four replies", comment+`.querySelectorAll('.replies [data-test=comment]').length === 4 && `+comment+`.querySelector('[data-test=replies-more]').hidden`)

	// A comment of A's own, and a delete of C's reply (A is the post's author).
	b.typeIn(`[data-test=comment-input]`, "My own note")
	b.click(`[data-test=comment-send]`)
	b.until("A's comment first", `document.querySelector('[data-test=comments] > [data-test=comment] [data-test=comment-text]').textContent === 'My own note'`)
	b.click(fmt.Sprintf(`[data-comment-id="%d"] [data-test=comment-delete]`, cReplies[0].ID))
	b.until("the reply gone", fmt.Sprintf(`!document.querySelector('[data-comment-id="%d"]')`, cReplies[0].ID))
	var post apiPost
	c.want(200, "GET", "/v1/posts/{id}", a, nil, &post, p.ID)
	if post.CommentCount != 5 {
		t.Fatalf("comment_count %d, want 5 (6 written, 1 deleted)", post.CommentCount)
	}
	b.until("the page's count", `document.querySelector('#post-view [data-test=post-comments] .count').textContent === '5'`)
	b.screenshot("comments", 390, 844)
}
