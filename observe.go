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
	// StreamPage: a page of a user's feed stream was read from the inbox
	// merged with pulls outboxes, those of the pull-mode authors the user
	// follows (0: the inbox alone). What --pull-threshold costs the read
	// side (docs/scaling.md).
	StreamPage(pulls int)
}

type nopObserver struct{}

func (nopObserver) InboxRebuilt()  {}
func (nopObserver) DegradedRead()  {}
func (nopObserver) CodeSent()      {}
func (nopObserver) StreamPage(int) {}

func (s *Service) observe() Observer {
	if s.Observe != nil {
		return s.Observe
	}
	return nopObserver{}
}
