package feedtest

// sized is n, the size of a randomized world (posts published before its
// scrolls), or a fifth of it, but at least 100, under the race detector,
// which makes each operation about ten times as costly: a race shows in a
// small world as in a large one (100 posts still give every world what its
// property needs, reposts placing posts among them), and scripts/test.sh
// runs the suites at full size without it too.
func sized(n int) int {
	if raceDetector {
		return max(n/5, min(n, 100))
	}
	return n
}
