package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/internal/bench"
)

// BenchmarkMutedWordsPage reads a page of MaxTimelineLimit posts, none of
// which the reader's muted words hide, through the real server (embedded
// store), in both orders: a reader with no muted words (none) against one
// with 200 random words over posts of prose of MaxContent characters
// (random), and against one with the 64 words a, aa, aaa ... over posts
// that are each one long word of a's (chain), every position of which
// ends all 64 words. cpu-ns/op is the CPU time of the whole process,
// server and client, per page: on a shared machine a steadier measure than
// the time it took.
func BenchmarkMutedWordsPage(b *testing.B) {
	s := startServer(b, "--data", b.TempDir())
	c := newV1Client(b, s)
	rnd := rand.New(rand.NewPCG(7, 8))
	word := func(letters string, n int) string {
		var w strings.Builder
		for range n {
			w.WriteByte(letters[rnd.IntN(len(letters))])
		}
		return w.String()
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	var randomWords, chainWords []string
	for range feed.MaxMutedWords {
		randomWords = append(randomWords, word(letters, 10)) // longer than any word of the posts
	}
	for i := range feed.MaxMutedWordLen {
		chainWords = append(chainWords, strings.Repeat("a", i+1))
	}
	sets := []struct {
		name   string
		words  []string
		author string
		post   func() map[string]any
	}{
		{"random", randomWords, "13800000901", func() map[string]any {
			var text strings.Builder
			for text.Len() < feed.MaxContent {
				text.WriteString(word(letters, 1+rnd.IntN(9)) + " ")
			}
			return map[string]any{"title": "A post of prose", "content": text.String()[:feed.MaxContent]}
		}},
		{"chain", chainWords, "13800000902", func() map[string]any {
			return map[string]any{"title": strings.Repeat("a", feed.MaxTitle), "content": strings.Repeat("a", feed.MaxContent)}
		}},
	}
	for i, set := range sets {
		author := c.login(set.author)
		none, muting := c.login(fmt.Sprintf("1380000091%d", i)), c.login(fmt.Sprintf("1380000092%d", i))
		for _, v := range []string{none, muting} {
			c.want(204, "PUT", "/v1/following/{id}", v, nil, nil, c.me(author).ID)
		}
		var last apiPost
		for range feed.MaxTimelineLimit {
			c.want(201, "POST", "/v1/posts", author, set.post(), &last)
		}
		for _, w := range set.words {
			c.want(204, "PUT", "/v1/muted-words/{word}", muting, nil, nil, w)
		}
		for _, reader := range []struct{ name, token string }{{"none", none}, {"words", muting}} {
			c.waitTimeline(reader.token, last.ID)
			for _, order := range []string{"chronological", "ranked"} {
				path := fmt.Sprintf("/v1/timeline?limit=%d&order=%s", feed.MaxTimelineLimit, order)
				var page apiPage[apiPost]
				c.want(200, "GET", path, reader.token, nil, &page)
				if len(page.Data) != feed.MaxTimelineLimit {
					b.Fatalf("%s %s: %d posts on the page, want %d", set.name, order, len(page.Data), feed.MaxTimelineLimit)
				}
				b.Run(set.name+"/"+order+"/"+reader.name, func(b *testing.B) {
					req, err := http.NewRequest("GET", s.base+path, nil)
					if err != nil {
						b.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer "+reader.token)
					cpu := bench.ProcessCPU()
					for b.Loop() {
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err != nil || resp.StatusCode != 200 {
							b.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
						}
					}
					b.ReportMetric(float64(bench.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
