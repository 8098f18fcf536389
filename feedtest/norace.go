//go:build !race

package feedtest

const raceDetector = false
