package feedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	feed "github.com/feedd/feedd"
)

// fakeSender is a feed.PushSender that records what it is asked to send
// and answers from a script (then 201).
type fakeSender struct {
	mu      sync.Mutex
	sent    []fakeSent
	replies []fakeReply
	keys    int // key pairs generated
}

type fakeSent struct {
	sub  feed.PushSubscription
	keys feed.VAPIDKeys
	msg  feed.PushMessage
}

type fakeReply struct {
	res feed.PushResult
	err error
}

func (f *fakeSender) CheckEndpoint(endpoint string) error {
	if endpoint == "https://internal.test/x" {
		return feed.Errorf(feed.EINVALID, "endpoint: not public")
	}
	return nil
}

func (f *fakeSender) GenerateKeys() (feed.VAPIDKeys, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys++
	return feed.VAPIDKeys{Private: fmt.Sprintf("private-%d", f.keys), Public: fmt.Sprintf("public-%d", f.keys)}, nil
}

func (f *fakeSender) Send(ctx context.Context, sub *feed.PushSubscription, keys feed.VAPIDKeys, m feed.PushMessage) (feed.PushResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, fakeSent{*sub, keys, m})
	if len(f.replies) == 0 {
		return feed.PushResult{Status: 201}, nil
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	return r.res, r.err
}

func (f *fakeSender) script(rs ...fakeReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, rs...)
}

func (f *fakeSender) take() []fakeSent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent
	f.sent = nil
	return out
}

// TestPush runs the contract of Web Push (feed.PushStore, the push jobs
// the stores enqueue, Service.DeliverPush) on the backend behind open,
// whose notification store must be its PushStore too.
func TestPush(t *testing.T, open func(t *testing.T, s feed.NotifySettings) *NotifyBackend) {
	t.Run("Subscriptions", func(t *testing.T) { testPushSubscriptions(t, open(t, feed.NotifySettings{})) })
	t.Run("Jobs", func(t *testing.T) { testPushJobs(t, open(t, feed.NotifySettings{})) })
	t.Run("Delivery", func(t *testing.T) { testPushDelivery(t, open(t, feed.NotifySettings{})) })
	t.Run("Keys", func(t *testing.T) { testPushKeys(t, open(t, feed.NotifySettings{})) })
}

func pushWorld(t *testing.T, b *NotifyBackend) (*notifyWorld, *fakeSender) {
	w := newNotifyWorld(t, b)
	st, ok := b.Notify.(feed.PushStore)
	if !ok {
		t.Fatalf("%T is no feed.PushStore", b.Notify)
	}
	f := &fakeSender{}
	w.s.Push = &feed.Push{Store: st, Sender: f, TTL: time.Hour}
	return w, f
}

// browserKeys are a valid p256dh and auth (RFC 8291's example).
const (
	testP256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	testAuth   = "BTBZMqHH6r4Tts7J_aSIgg"
)

func (w *notifyWorld) subscribe(user int64, endpoint string, alerts map[string]bool) *feed.PushSubscription {
	w.t.Helper()
	w.tick(time.Second)
	sub, err := w.s.SubscribePush(w.t.Context(), user, feed.PushInput{Endpoint: endpoint, P256dh: testP256dh, Auth: testAuth, Alerts: alerts})
	must(w.t, err, "SubscribePush")
	return sub
}

func (w *notifyWorld) subscriptions(user int64) []feed.PushSubscription {
	w.t.Helper()
	subs, err := w.s.PushSubscriptions(w.t.Context(), user)
	must(w.t, err, "PushSubscriptions")
	return subs
}

// pushJobs returns the push jobs the stores enqueued since the last call.
func (w *notifyWorld) pushJobs() []feed.PushJob {
	var out []feed.PushJob
	for _, j := range w.b.Jobs() {
		if p, ok := j.(feed.PushJob); ok {
			out = append(out, p)
		}
	}
	return out
}

// testPushSubscriptions: a subscription is stored with its alerts (kinds
// not named are on); bad input changes nothing; an endpoint subscribed
// again replaces the old subscription, whoever's it was; a user keeps
// the newest MaxPushSubscriptions; only its owner removes one.
func testPushSubscriptions(t *testing.T, b *NotifyBackend) {
	w, _ := pushWorld(t, b)
	ctx := t.Context()
	u := w.users(2)
	a, other := u[0], u[1]
	sub := w.subscribe(a, "https://push.test/1", map[string]bool{feed.NotifyLike: false, feed.NotifyFollow: true})
	subs := w.subscriptions(a)
	if len(subs) != 1 || subs[0].ID != sub.ID || subs[0].Endpoint != "https://push.test/1" || subs[0].P256dh != testP256dh || subs[0].Auth != testAuth {
		t.Fatalf("subscriptions %+v, want %+v", subs, sub)
	}
	want := map[string]bool{}
	for _, k := range feed.NotifyKinds {
		want[k] = k != feed.NotifyLike
	}
	if got := subs[0].Alerts(); !mapsEqual(got, want) {
		t.Fatalf("alerts %v, want %v", got, want)
	}
	for name, in := range map[string]feed.PushInput{
		"not a URL":          {Endpoint: "push", P256dh: testP256dh, Auth: testAuth},
		"not allowed":        {Endpoint: "https://internal.test/x", P256dh: testP256dh, Auth: testAuth},
		"user info":          {Endpoint: "https://u:p@push.test/x", P256dh: testP256dh, Auth: testAuth},
		"too long":           {Endpoint: "https://push.test/" + string(make([]byte, feed.MaxPushEndpoint)), P256dh: testP256dh, Auth: testAuth},
		"short key":          {Endpoint: "https://push.test/x", P256dh: testAuth, Auth: testAuth},
		"key off the curve":  {Endpoint: "https://push.test/x", P256dh: "B" + testP256dh[1:86] + "A", Auth: testAuth},
		"short auth":         {Endpoint: "https://push.test/x", P256dh: testP256dh, Auth: "AAAA"},
		"unknown alert kind": {Endpoint: "https://push.test/x", P256dh: testP256dh, Auth: testAuth, Alerts: map[string]bool{"poll": true}},
	} {
		_, err := w.s.SubscribePush(ctx, a, in)
		wantCode(t, err, feed.EINVALID, name)
	}
	if n := len(w.subscriptions(a)); n != 1 {
		t.Fatalf("%d subscriptions after refused ones, want 1", n)
	}
	// The same endpoint by another user (the browser's next account).
	moved := w.subscribe(other, "https://push.test/1", nil)
	if len(w.subscriptions(a)) != 0 || len(w.subscriptions(other)) != 1 || moved.ID == sub.ID {
		t.Fatalf("the endpoint did not move: %+v, %+v", w.subscriptions(a), w.subscriptions(other))
	}
	var ids []int64
	for i := range feed.MaxPushSubscriptions + 2 {
		ids = append(ids, w.subscribe(a, fmt.Sprintf("https://push.test/a%d", i), nil).ID)
	}
	subs = w.subscriptions(a)
	var got []int64
	for _, s := range subs {
		got = append(got, s.ID)
	}
	if !slices.Equal(got, ids[2:]) {
		t.Fatalf("kept %v, want the newest %v", got, ids[2:])
	}
	wantCode(t, w.s.UnsubscribePush(ctx, other, ids[5]), feed.ENOTFOUND, "another user's subscription")
	must(t, w.s.UnsubscribePush(ctx, a, ids[5]), "UnsubscribePush")
	wantCode(t, w.s.UnsubscribePush(ctx, a, ids[5]), feed.ENOTFOUND, "unsubscribing twice")
	if n := len(w.subscriptions(a)); n != feed.MaxPushSubscriptions-1 {
		t.Fatalf("%d subscriptions, want %d", n, feed.MaxPushSubscriptions-1)
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// testPushJobs: a job is enqueued per subscription that wants the kind
// when a group opens, and only then: more actors joining the group, a
// like taken back and given again (told once) and a muted actor's like
// enqueue nothing; a new group after the window does.
func testPushJobs(t *testing.T, b *NotifyBackend) {
	w, _ := pushWorld(t, b)
	ctx := t.Context()
	u := w.users(5)
	a := u[0]
	p := w.publish(a, "mine")
	likes := w.subscribe(a, "https://push.test/likes", nil)
	noLikes := w.subscribe(a, "https://push.test/nolikes", map[string]bool{feed.NotifyLike: false})
	w.pushJobs()
	w.like(u[1], p, true)
	jobs := w.pushJobs()
	gs := w.page(a)
	if len(jobs) != 1 || jobs[0] != (feed.PushJob{SubscriptionID: likes.ID, UserID: a, GroupID: gs[0].ID}) {
		t.Fatalf("jobs of a first like %+v, want one for subscription %d, group %d", jobs, likes.ID, gs[0].ID)
	}
	w.like(u[2], p, true)
	w.like(u[1], p, false)
	w.like(u[1], p, true)
	if jobs := w.pushJobs(); len(jobs) != 0 {
		t.Fatalf("jobs of likes joining the group: %+v", jobs)
	}
	must(t, w.s.Mute(ctx, a, u[3], true), "Mute")
	w.like(u[3], p, true)
	if jobs := w.pushJobs(); len(jobs) != 0 {
		t.Fatalf("jobs of a muted user's like: %+v", jobs)
	}
	w.tick(time.Second)
	must(t, w.s.Follow(ctx, u[4], a, true), "Follow")
	jobs = w.pushJobs()
	if len(jobs) != 2 || jobs[0].SubscriptionID == jobs[1].SubscriptionID || (jobs[0].SubscriptionID != noLikes.ID && jobs[1].SubscriptionID != noLikes.ID) {
		t.Fatalf("jobs of a follow %+v, want one for each subscription", jobs)
	}
	w.tick(feed.DefaultNotifyWindow + time.Second)
	w.like(u[4], p, true)
	if jobs := w.pushJobs(); len(jobs) != 1 || jobs[0].SubscriptionID != likes.ID {
		t.Fatalf("jobs of a like after the window %+v, want one", jobs)
	}
}

// testPushDelivery: DeliverPush sends a group as its list shows it, with
// TTL, urgency and the group's key as topic, signed with the stored keys;
// and follows the push service's answer: 410 and 404 remove the
// subscription, 429 and 5xx are retried after its Retry-After, another
// 4xx and an endpoint not allowed are refused. Nothing is sent for a
// subscription gone or whose alert is now off, a group read, gone or
// whose actors are now muted, or one older than the TTL.
func testPushDelivery(t *testing.T, b *NotifyBackend) {
	w, f := pushWorld(t, b)
	ctx := t.Context()
	u := w.users(4)
	a := u[0]
	p := w.publish(a, "A post title")
	sub := w.subscribe(a, "https://push.test/1", nil)
	w.like(u[1], p, true)
	w.like(u[2], p, true)
	jobs := w.pushJobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	job := jobs[0]
	deliver := func(want feed.PushOutcome, wantWait time.Duration) {
		t.Helper()
		out, wait, err := w.s.DeliverPush(ctx, job)
		must(t, err, "DeliverPush")
		if out != want || wait != wantWait {
			t.Fatalf("DeliverPush: %v after %v, want %v after %v", out, wait, want, wantWait)
		}
	}
	deliver(feed.PushSent, 0)
	sent := f.take()
	if len(sent) != 1 {
		t.Fatalf("%d sent, want 1", len(sent))
	}
	m := sent[0]
	var payload feed.PushPayload
	must(t, json.Unmarshal(m.msg.Payload, &payload), "payload")
	key := feed.NotifyKey(job.GroupID)
	wantTitle := "user_3 and user_2 liked your post" // u[2], u[1]: the newest actor first
	if payload.Key != key || payload.Kind != feed.NotifyLike || payload.Count != 2 || payload.PostID != p || payload.Title != wantTitle || payload.Body != "A post title" {
		t.Fatalf("payload %+v, want key %s, 2 likes of post %d titled %q", payload, key, p, wantTitle)
	}
	if m.msg.TTL != time.Hour || m.msg.Urgency != "low" || m.msg.Topic != key || m.sub.ID != sub.ID || m.keys.Public != "public-1" {
		t.Fatalf("message %+v to %d with keys %+v", m.msg, m.sub.ID, m.keys)
	}
	f.script(fakeReply{res: feed.PushResult{Status: 429, RetryAfter: 30 * time.Second}}, fakeReply{res: feed.PushResult{Status: 503}},
		fakeReply{err: errors.New("connection refused")}, fakeReply{res: feed.PushResult{Status: 400}},
		fakeReply{err: fmt.Errorf("dial: %w", feed.ErrPushEndpoint)})
	deliver(feed.PushRetry, 30*time.Second)
	deliver(feed.PushRetry, 0)
	deliver(feed.PushRetry, 0)
	deliver(feed.PushRefused, 0)
	deliver(feed.PushRefused, 0)
	f.take()

	// Nothing to send.
	off := w.subscribe(a, "https://push.test/1", map[string]bool{feed.NotifyLike: false}) // replaces sub
	job.SubscriptionID = sub.ID
	deliver(feed.PushSkipped, 0) // the subscription is gone
	job.SubscriptionID = off.ID
	deliver(feed.PushSkipped, 0) // likes are off
	on := w.subscribe(a, "https://push.test/1", nil)
	job.SubscriptionID = on.ID
	must(t, w.s.MarkNotificationsRead(ctx, a, job.GroupID), "read")
	deliver(feed.PushSkipped, 0) // read
	w.tick(time.Second)
	w.like(u[3], p, true) // unread again
	must(t, w.s.Mute(ctx, a, u[1], true), "Mute")
	must(t, w.s.Mute(ctx, a, u[2], true), "Mute")
	must(t, w.s.Mute(ctx, a, u[3], true), "Mute")
	deliver(feed.PushSkipped, 0) // every actor muted: the group shows nobody
	if got := f.take(); len(got) != 0 {
		t.Fatalf("sent %d for nothing to send", len(got))
	}
	must(t, w.s.Mute(ctx, a, u[3], false), "Unmute")
	w.tick(time.Hour + time.Minute)
	deliver(feed.PushSkipped, 0) // older than the TTL (the unmute restored nobody)

	// 410 and 404 remove the subscription.
	w.like(u[1], w.publish(a, "another"), true) // muted: no group
	q := w.publish(a, "third")
	w.like(u[3], q, true)
	jobs = w.pushJobs()
	if len(jobs) != 1 {
		t.Fatalf("%d jobs of a new group, want 1", len(jobs))
	}
	job = jobs[0]
	f.script(fakeReply{res: feed.PushResult{Status: 410}})
	deliver(feed.PushGone, 0)
	if n := len(w.subscriptions(a)); n != 0 {
		t.Fatalf("%d subscriptions after a 410, want 0", n)
	}
	deliver(feed.PushSkipped, 0)
	job.SubscriptionID = w.subscribe(a, "https://push.test/2", nil).ID
	f.script(fakeReply{res: feed.PushResult{Status: 404}})
	deliver(feed.PushGone, 0)
	if n := len(w.subscriptions(a)); n != 0 {
		t.Fatalf("%d subscriptions after a 404, want 0", n)
	}
}

// testPushKeys: the VAPID keys are made once and kept: concurrent first
// calls and later services all get the same pair.
func testPushKeys(t *testing.T, b *NotifyBackend) {
	st := b.Notify.(feed.PushStore)
	var wg sync.WaitGroup
	keys := make([]feed.VAPIDKeys, 8)
	for i := range keys {
		wg.Go(func() {
			f := &fakeSender{keys: 10 * i}
			k, err := st.VAPIDKeys(t.Context(), f.GenerateKeys)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if k != keys[0] || k.Public == "" {
			t.Fatalf("keys %+v, want all %+v", keys, keys[0])
		}
	}
	w, _ := pushWorld(t, b)
	pub, err := w.s.PushKey(t.Context())
	must(t, err, "PushKey")
	if pub != keys[0].Public {
		t.Fatalf("PushKey %s, want the stored %s", pub, keys[0].Public)
	}
}
