package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// burn asks, from p, for a code for phone and burns it with five wrong
// tries; it reports whether the code was sent.
func burn(t *testing.T, p *peer, phone string) bool {
	t.Helper()
	if r := p.do("POST", "/user/code?phone="+phone, "", nil); !r.Success {
		wantWait(t, r, "code request")
		return false
	}
	code := mustAtoi(t, p.s.lastCode(phone))
	for i := range 5 {
		if r := p.do("POST", "/user/login", "", map[string]string{"phone": phone, "code": fmt.Sprintf("%06d", (code+1+i)%1000000)}); r.Success {
			t.Fatal("a wrong code logged in")
		}
	}
	return true
}

// TestPhoneQuotaShared: five client addresses (127.0.0.2 to .6) ask for
// one phone's codes and burn each with five wrong tries, as fast as the
// resend wait (300 ms here) lets them, until all are refused: no more
// than the phone's daily quota (10) is sent in all, burned or not, and no
// address has more than its share (3) sent. The owner, at 127.0.0.7, is
// then told when it can try again: 429 with Retry-After on /v1, the
// compatible refusal with Retry-After too.
func TestPhoneQuotaShared(t *testing.T) {
	clk := useClock(t) // stands still; each round moves it past the resend wait
	clk.frozen.Store(time.Now().UnixMilli())
	s := startServer(t, "--data", t.TempDir(), "--code-limit-phone", "10/24h", "--code-limit-phone-client", "3/24h",
		"--code-resend-after", "300ms")
	victim := abusePhone(7)
	var attackers []*peer
	for i := 2; i <= 6; i++ {
		attackers = append(attackers, s.from(fmt.Sprintf("127.0.0.%d", i)))
	}
	sent := make([]int, len(attackers))
	total := 0
	for round := 0; round < 40; round++ {
		quota := 0 // attackers refused by the phone's quota or their share
		for i, a := range attackers {
			r := a.do("POST", "/user/code?phone="+victim, "", nil)
			switch {
			case r.Success:
				sent[i]++
				total++
				code := mustAtoi(t, s.lastCode(victim))
				for k := range 5 {
					wrong := fmt.Sprintf("%06d", (code+1+k)%1000000)
					if r := a.do("POST", "/user/login", "", map[string]string{"phone": victim, "code": wrong}); r.Success {
						t.Fatal("a wrong code logged in")
					}
				}
			case strings.Contains(r.ErrorMsg, "too many codes for this phone"):
				quota++
			case strings.Contains(r.ErrorMsg, "a code was sent less than"):
			default:
				t.Fatalf("code request from attacker %d: %s", i, r.Raw)
			}
		}
		if quota == len(attackers) {
			break
		}
		clk.frozen.Add(350)
	}
	if got := s.logs.countWith("login code", "phone", victim); got != total {
		t.Fatalf("%d codes logged for the phone, %d answered as sent", got, total)
	}
	for i, n := range sent {
		if n > 3 {
			t.Errorf("attacker %d had %d codes sent, over its share of 3", i, n)
		}
	}
	if total != 10 {
		t.Fatalf("five addresses had %d codes sent to one phone (per address %v), want the phone's quota, 10", total, sent)
	}
	owner := s.from("127.0.0.7")
	resp, body := owner.raw("POST", "/v1/auth/code", "", map[string]string{"phone": victim})
	want429(t, resp, body, "/v1/auth/code of a phone whose quota others spent")
	if ra := mustAtoi(t, resp.Header.Get("Retry-After")); ra < 23*3600 {
		t.Errorf("Retry-After %d s, want the rest of the phone's day", ra)
	}
	resp, body = owner.raw("POST", "/user/code?phone="+victim, "", nil)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "wait") {
		t.Fatalf("compatible code request of a phone whose quota others spent: %s %s", resp.Header, body)
	}
}

// TestResendWaitAfterBurn: a code burned by five wrong tries from one
// address still holds the resend wait (60 s): another address asking for
// the phone's code at once is refused with the time left (409 and
// Retry-After on /v1; the compatible refusal with Retry-After).
func TestResendWaitAfterBurn(t *testing.T) {
	s := startServer(t, "--data", t.TempDir())
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	victim := abusePhone(9)
	if !burn(t, attacker, victim) {
		t.Fatal("the first code was refused")
	}
	resp, body := owner.raw("POST", "/user/code?phone="+victim, "", nil)
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 || !strings.Contains(string(body), `"success":false`) {
		t.Fatalf("code asked for right after a burned one: %d %s %s, want a refusal with Retry-After of at most 60 s", resp.StatusCode, resp.Header, body)
	}
	resp, body = owner.raw("POST", "/v1/auth/code", "", map[string]string{"phone": victim})
	ra, err = strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 409 || err != nil || ra < 1 || ra > 60 || !strings.Contains(string(body), `"conflict"`) {
		t.Fatalf("/v1 code asked for right after a burned one: %d %s %s, want 409 with Retry-After", resp.StatusCode, resp.Header, body)
	}
}

// TestCodeTotalSpentOnlyBySends: requests the resend rule refuses spend
// nothing of the total budget (--code-limit-total 2/1h): after a code, two
// refused resends and a second phone's code, the budget is spent, and only
// then.
func TestCodeTotalSpentOnlyBySends(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--code-limit-total", "2/1h")
	p := s.from("127.0.0.2")
	if r := p.do("POST", "/user/code?phone="+abusePhone(1), "", nil); !r.Success {
		t.Fatal(r.Raw)
	}
	for range 2 {
		if r := p.do("POST", "/user/code?phone="+abusePhone(1), "", nil); r.Success || strings.Contains(r.ErrorMsg, "busy") {
			t.Fatalf("resend within a minute: %s, want the resend rule's refusal", r.Raw)
		}
	}
	if r := p.do("POST", "/user/code?phone="+abusePhone(2), "", nil); !r.Success {
		t.Fatalf("second code of the budget: %s", r.Raw)
	}
	wantWait(t, p.do("POST", "/user/code?phone="+abusePhone(3), "", nil), "third code of a budget of 2")
}

// TestLoginFailLimitConcurrent: 40 wrong guesses sent at once from one
// address, against phones with live codes, get at most
// --login-fail-limit-client (6) answers that looked at a code; the others
// are told to wait (or shed by --max-writes, also unseen).
func TestLoginFailLimitConcurrent(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--data", t.TempDir(), "--login-fail-limit-client", "6/10m")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	codes := map[string]int{}
	for i := range 8 {
		phone := abusePhone(200 + i)
		if r := owner.do("POST", "/user/code?phone="+phone, "", nil); !r.Success {
			t.Fatal(r.Raw)
		}
		codes[phone] = mustAtoi(t, s.lastCode(phone))
	}
	var mu sync.Mutex
	checked, waits, shed := 0, 0, 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 40 {
		phone := abusePhone(200 + i%8)
		wrong := fmt.Sprintf("%06d", (codes[phone]+1+i/8)%1000000)
		wg.Go(func() {
			<-start
			r := attacker.do("POST", "/user/login", "", map[string]string{"phone": phone, "code": wrong})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Success:
				t.Error("a wrong code logged in")
			case strings.Contains(r.ErrorMsg, "wait"):
				waits++
			case strings.Contains(r.ErrorMsg, "busy"): // shed (--max-writes): not looked at
				shed++
			case strings.Contains(r.ErrorMsg, "code is wrong"):
				checked++
			default:
				t.Errorf("unexpected answer %s", r.Raw)
			}
		})
	}
	close(start)
	wg.Wait()
	if checked > 6 || waits == 0 {
		t.Fatalf("%d of 40 concurrent wrong guesses were checked (%d told to wait, %d shed), want at most 6", checked, waits, shed)
	}
}
