package redis

// WireFallbacks is how many delivery batches of ib went again through
// go-redis after the wire path failed (wire.go).
func WireFallbacks(ib *Inbox) int64 {
	if ib.wire == nil {
		return -1
	}
	return ib.wire.fallbacks.Load()
}

// AppendedKeys are the inbox, packed body and outbox keys of id as the wire
// path builds them.
func AppendedKeys(prefix string, id int64) (inbox, body, outbox string) {
	inbox = string(appendInboxKey(nil, prefix, id))
	return inbox, inbox + bodySuffix, string(appendOutboxKey(nil, prefix, id))
}
