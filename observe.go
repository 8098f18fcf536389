package feed

// Observer is told of the events operators count (feedd exports them as
// metrics). Its methods must be cheap and safe for concurrent use; the
// domain never waits on them. Service.Observe nil: nobody is told.
type Observer interface {
	// InboxRebuilt: an inbox was refilled from the source of truth (it
	// was lost from the inbox store, or its idle owner came back).
	InboxRebuilt()
	// DegradedRead: a feed page was computed from the database because
	// the inbox store (Redis) failed.
	DegradedRead()
	// CodeSent: a login code was handed to the CodeSender.
	CodeSent()
}

type nopObserver struct{}

func (nopObserver) InboxRebuilt() {}
func (nopObserver) DegradedRead() {}
func (nopObserver) CodeSent()     {}

func (s *Service) observe() Observer {
	if s.Observe != nil {
		return s.Observe
	}
	return nopObserver{}
}
