package feed

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// jsonEvent decodes b as encoding/json does, into an Event.
func jsonEvent(b []byte) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, err
	}
	return Event{Kind: w.Kind, Entry: Entry{Score: w.Score, PostID: w.PostID}, Users: w.Users, Author: w.Author}, nil
}

// TestEventWireMatchesJSON: for random events of both kinds (no users,
// one, a batch; extreme ids; with and without an author), the hand-written
// form is byte for byte json.Marshal's, and parseWireEvent reads it back
// as encoding/json does.
func TestEventWireMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return math.MaxInt64 - rng.Int64N(3)
		case 1:
			return math.MinInt64 + rng.Int64N(3)
		case 2:
			return rng.Int64N(10) - 5
		}
		return rng.Int64()
	}
	for i := range 2000 {
		ev := Event{Kind: []string{EventPost, EventDelete}[i%2], Entry: Entry{Score: ids(), PostID: ids()}}
		switch rng.IntN(3) {
		case 1:
			ev.Users = []int64{ids()}
		case 2:
			for range rng.IntN(1200) {
				ev.Users = append(ev.Users, ids())
			}
		}
		if rng.IntN(2) == 0 {
			ev.Author = ids()
		}
		got, err := MarshalEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(wireEvent{Kind: ev.Kind, Score: ev.Entry.Score, PostID: ev.Entry.PostID, Users: ev.Users, Author: ev.Author})
		if string(got) != string(want) {
			t.Fatalf("MarshalEvent(%+v)\n got %s\nwant %s", ev, got, want)
		}
		back, ok := parseWireEvent(got)
		if !ok {
			t.Fatalf("parseWireEvent(%s): not read", got)
		}
		ref, _ := jsonEvent(got)
		if !reflect.DeepEqual(back, ref) {
			t.Fatalf("parseWireEvent(%s) = %+v, encoding/json %+v", got, back, ref)
		}
	}
}

// FuzzEventWire: whatever parseWireEvent accepts, encoding/json reads the
// same; UnmarshalEvent never panics.
func FuzzEventWire(f *testing.F) {
	for _, s := range []string{
		`{"k":"post","s":1700000000123,"p":7,"u":[1,2,3]}`,
		`{"k":"delete","s":1,"p":2,"a":3}`,
		`{"k":"post","s":-0,"p":01}`,
		`{"k":"post","s":9223372036854775808,"p":1}`,
		`{"k":"post","s":1,"p":1,"u":[]}`,
		`{"k":"post","s":1,"p":1,"a":0}`,
		`{"p":1,"k":"post","s":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		UnmarshalEvent(b)
		ev, ok := parseWireEvent(b)
		if !ok {
			return
		}
		ref, err := jsonEvent(b)
		if err != nil {
			t.Fatalf("parseWireEvent(%q) = %+v, encoding/json refuses it: %v", b, ev, err)
		}
		if !reflect.DeepEqual(ev, ref) {
			t.Fatalf("parseWireEvent(%q) = %+v, encoding/json %+v", b, ev, ref)
		}
	})
}

func BenchmarkEventWire(b *testing.B) {
	ev := Event{Kind: EventPost, Entry: Entry{Score: 1764000000000, PostID: 123456789}}
	for u := range int64(1000) {
		ev.Users = append(ev.Users, 1_000_000+u)
	}
	enc, _ := MarshalEvent(ev)
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			bs, _ := json.Marshal(wireEvent{Kind: ev.Kind, Score: ev.Entry.Score, PostID: ev.Entry.PostID, Users: ev.Users})
			if _, err := jsonEvent(bs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		for b.Loop() {
			bs, _ := MarshalEvent(ev)
			if _, err := UnmarshalEvent(bs); err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = enc
}
