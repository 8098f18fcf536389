package redis

// WireFallbacks is how many delivery batches of ib went again through
// go-redis after the wire path failed (wire.go).
func WireFallbacks(ib *Inbox) int64 {
	if ib.wire == nil {
		return -1
	}
	return ib.wire.fallbacks.Load()
}

// AppendedKeys are the inbox, packed head, packed body and outbox keys of
// id as the wire path builds them.
func AppendedKeys(prefix string, id int64) (inbox, head, body, outbox string) {
	inbox = string(appendInboxKey(nil, prefix, id))
	head = string(appendPackedHeadKey(nil, prefix, id))
	return inbox, head, head[:len(head)-len(headSuffix)] + bodySuffix, string(appendOutboxKey(nil, prefix, id))
}
