//go:build race

package reliability

// raceEnabled: built with -race, where every memory access costs ~10×: the soak replays fewer traces.
const raceEnabled = true
