//go:build !race

package dashboard_test

const raceEnabled = false
