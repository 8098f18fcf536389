//go:build race

package feedtest

const raceDetector = true
