package feedtest

// sized is n, the size of a randomized world (posts published before its
// scrolls), or a fifth of it under the race detector, which makes each
// operation about ten times as costly: a race shows in a small world as
// in a large one, and scripts/test.sh runs the suites at full size
// without it too.
func sized(n int) int {
	if raceDetector {
		return max(n/5, 1)
	}
	return n
}
