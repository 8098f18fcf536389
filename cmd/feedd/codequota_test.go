package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
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

// TestPhoneQuotaNotSpentByOthers: an attacker at 127.0.0.2 asks for the
// victim's codes and burns them, as fast as it can, ten times: one address
// gets at most --code-limit-phone-client (3) of them sent, and the burned
// ones gave the phone's quota back, so the owner at 127.0.0.3 still gets a
// code and logs in. (The limits per address on code requests and failed
// logins are off here: the phone's quota alone is what is tested.)
func TestPhoneQuotaNotSpentByOthers(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--code-limit-phone", "10/24h", "--code-limit-phone-client", "3/24h")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	victim := abusePhone(7)
	sent := 0
	for range 10 {
		if burn(t, attacker, victim) {
			sent++
		}
	}
	if sent != 3 {
		t.Fatalf("one address had %d codes sent to one phone, want 3", sent)
	}
	resp, body := attacker.raw("POST", "/v1/auth/code", "", map[string]string{"phone": victim})
	want429(t, resp, body, "/v1/auth/code over the address's share of the phone")
	if tok := owner.login(victim); tok == "" {
		t.Fatal("the owner got no token")
	}
}

// TestBurnedCodesDoNotSpendQuota: with a phone quota of 3 a day and no
// share per address, five codes asked for and burned from one address
// leave the quota whole: the owner, elsewhere, still gets one.
func TestBurnedCodesDoNotSpendQuota(t *testing.T) {
	s := startServer(t, "--data", t.TempDir(), "--code-limit-phone", "3/24h")
	attacker, owner := s.from("127.0.0.2"), s.from("127.0.0.3")
	victim := abusePhone(8)
	for i := range 5 {
		if !burn(t, attacker, victim) {
			t.Fatalf("code %d after %d burned ones was refused", i+1, i)
		}
	}
	if tok := owner.login(victim); tok == "" {
		t.Fatal("the owner got no token")
	}
}

// TestCodeTotalSpentOnlyBySends: requests the resend rule refuses spend
// nothing of the total budget (--code-limit-total 2/1h): after a code, two
// refused resends and a second phone's code, the budget is spent, and only
// then.
func TestCodeTotalSpentOnlyBySends(t *testing.T) {
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
