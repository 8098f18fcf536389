package feed

import (
	"math"
	"strconv"
)

// The wire form of events, written and read without encoding/json: a
// fan-out's event names up to a batch of users, and every API process
// reads every event, and decoding it with encoding/json was a share of a
// big fan-out's CPU worth removing (BENCHMARKS.md, "Fan-out"). The
// bytes are exactly those json.Marshal writes for wireEvent, so processes
// of either kind read each other's events.

// appendWireEvent appends the JSON of ev as wireEvent to b. ev.Kind must
// be EventPost or EventDelete (no character to escape).
func appendWireEvent(b []byte, ev Event) []byte {
	b = append(b, `{"k":"`...)
	b = append(b, ev.Kind...)
	b = append(b, `","s":`...)
	b = strconv.AppendInt(b, ev.Entry.Score, 10)
	b = append(b, `,"p":`...)
	b = strconv.AppendInt(b, ev.Entry.PostID, 10)
	if len(ev.Users) > 0 {
		b = append(b, `,"u":[`...)
		for i, u := range ev.Users {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, u, 10)
		}
		b = append(b, ']')
	}
	if ev.Author != 0 {
		b = append(b, `,"a":`...)
		b = strconv.AppendInt(b, ev.Author, 10)
	}
	return append(b, '}')
}

// parseWireEvent parses b when it is exactly what appendWireEvent writes;
// ok is false for anything else (which UnmarshalEvent hands to
// encoding/json, so this is a fast path, never a second grammar).
func parseWireEvent(b []byte) (ev Event, ok bool) {
	w := wireReader{b: b}
	if !w.lit(`{"k":"`) {
		return Event{}, false
	}
	switch {
	case w.lit(EventPost + `"`):
		ev.Kind = EventPost
	case w.lit(EventDelete + `"`):
		ev.Kind = EventDelete
	default:
		return Event{}, false
	}
	if !w.lit(`,"s":`) || !w.int(&ev.Entry.Score) || !w.lit(`,"p":`) || !w.int(&ev.Entry.PostID) {
		return Event{}, false
	}
	if w.lit(`,"u":[`) {
		ev.Users = make([]int64, 0, 1+len(w.b)/8)
		for {
			var u int64
			if !w.int(&u) {
				return Event{}, false
			}
			ev.Users = append(ev.Users, u)
			if w.lit(`]`) {
				break
			}
			if !w.lit(`,`) {
				return Event{}, false
			}
		}
	}
	if w.lit(`,"a":`) && (!w.int(&ev.Author) || ev.Author == 0) {
		return Event{}, false
	}
	if !w.lit(`}`) || len(w.b) != 0 {
		return Event{}, false
	}
	return ev, true
}

// wireReader reads parseWireEvent's input from the front.
type wireReader struct{ b []byte }

// lit consumes s if the input starts with it.
func (w *wireReader) lit(s string) bool {
	if len(w.b) < len(s) || string(w.b[:len(s)]) != s {
		return false
	}
	w.b = w.b[len(s):]
	return true
}

// int consumes an integer as strconv.AppendInt writes it: an optional
// minus, then digits without a leading zero (except 0 itself, never
// negative), within int64.
func (w *wireReader) int(v *int64) bool {
	b := w.b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n := 0
	var x uint64
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		if n == 19 { // more digits than any int64 has
			return false
		}
		x = x*10 + uint64(b[n]-'0')
		n++
	}
	if n == 0 || (n > 1 && b[0] == '0') || (neg && x == 0) {
		return false
	}
	// 19 digits fit in a uint64 (< 1.85e19); the bound is int64's.
	switch {
	case !neg && x > math.MaxInt64, neg && x > 1<<63:
		return false
	case neg:
		*v = int64(-x)
	default:
		*v = int64(x)
	}
	w.b = b[n:]
	return true
}
