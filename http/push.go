package http

import (
	"net/http"

	feed "github.com/feedd/feedd"
)

// The Web Push routes of the native API (docs/API.md, "Web Push").

// V1PushKey is the server's public VAPID key, base64url: a browser's
// applicationServerKey.
type V1PushKey struct {
	PublicKey string `json:"public_key"`
}

// V1PushSubscription is a stored subscription. Its keys are not shown
// again.
type V1PushSubscription struct {
	ID        int64           `json:"id"`
	Endpoint  string          `json:"endpoint"`
	Alerts    map[string]bool `json:"alerts"`
	CreatedAt string          `json:"created_at"`
}

// NewV1PushSubscription renders a subscription.
func NewV1PushSubscription(p *feed.PushSubscription) V1PushSubscription {
	return V1PushSubscription{ID: p.ID, Endpoint: p.Endpoint, Alerts: p.Alerts(), CreatedAt: p.CreatedAt.UTC().Format(timeLayout)}
}

func (s *Server) v1PushKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := s.Service.PushKey(r.Context())
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusOK, V1PushKey{PublicKey: k})
	})
}

func (s *Server) v1PushSubscriptions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subs, err := s.Service.PushSubscriptions(r.Context(), userID(r))
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		out := V1Page[V1PushSubscription]{Data: make([]V1PushSubscription, len(subs))}
		for i := range subs {
			out.Data[i] = NewV1PushSubscription(&subs[i])
		}
		s.v1JSON(w, http.StatusOK, out)
	})
}

// v1Subscribe stores the browser's PushSubscription as its toJSON() gives
// it ({"endpoint", "keys": {"p256dh", "auth"}}), with the alerts wanted
// ({"like": true, "follow": false, ...}; a kind not named is on).
func (s *Server) v1Subscribe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Endpoint string `json:"endpoint"`
			// ExpirationTime is in toJSON()'s output; feedd keeps a
			// subscription until its push service answers 404 or 410.
			ExpirationTime *float64 `json:"expirationTime"`
			Keys           struct {
				P256dh string `json:"p256dh"`
				Auth   string `json:"auth"`
			} `json:"keys"`
			Alerts map[string]bool `json:"alerts"`
		}
		var sub *feed.PushSubscription
		err := v1Decode(r, &in)
		if err == nil {
			sub, err = s.Service.SubscribePush(r.Context(), userID(r), feed.PushInput{
				Endpoint: in.Endpoint, P256dh: in.Keys.P256dh, Auth: in.Keys.Auth, Alerts: in.Alerts,
			})
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		s.v1JSON(w, http.StatusCreated, NewV1PushSubscription(sub))
	})
}

func (s *Server) v1Unsubscribe() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := parseID("id", r.PathValue("id"))
		if err == nil {
			err = s.Service.UnsubscribePush(r.Context(), userID(r), id)
		}
		if err != nil {
			s.v1Fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
