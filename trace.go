package feed

import (
	"log/slog"
	"time"
)

// Tracer logs the way of posts to their followers' live streams, stage by
// stage (feedd --trace-posts; docs/operations.md, "Tracing a post"): one
// line per stage with the post id and the wall-clock time in microseconds,
// so that the lines of an API process and of a worker process can be put
// side by side. A nil *Tracer logs nothing and costs one comparison.
type Tracer struct {
	Log *slog.Logger
}

// Stage logs that post postID reached stage now; args are more attributes
// (key, value pairs).
func (t *Tracer) Stage(postID int64, stage string, args ...any) {
	if t == nil || t.Log == nil {
		return
	}
	t.Log.Info("post trace", append([]any{"post_id", postID, "stage", stage, "at_us", time.Now().UnixMicro()}, args...)...)
}

// Enabled reports whether t logs.
func (t *Tracer) Enabled() bool { return t != nil && t.Log != nil }
