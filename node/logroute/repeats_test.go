package logroute

import (
	"log/slog"
	"testing"
	"time"
)

func TestRepeats(t *testing.T) {
	const every = time.Hour
	r := Repeats{Every: every}
	t0 := time.Unix(0, 0)
	for i, step := range []struct {
		key   string
		at    time.Duration
		level slog.Level
		n     int
	}{
		{"404", 0, slog.LevelWarn, 0},
		{"404", time.Minute, slog.LevelDebug, 1},
		{"404", 2 * time.Minute, slog.LevelDebug, 2},
		{"404", every, slog.LevelWarn, 3},
		{"404", every + time.Minute, slog.LevelDebug, 1},
		{"502", every + 2*time.Minute, slog.LevelWarn, 0},
		{"404", every + 3*time.Minute, slog.LevelWarn, 0},
	} {
		level, n := r.Level(slog.LevelWarn, step.key, t0.Add(step.at))
		if level != step.level || n != step.n {
			t.Errorf("step %d (%s at %s): level %s, %d repeats; want %s, %d", i, step.key, step.at, level, n, step.level, step.n)
		}
	}
	r.Reset()
	if level, _ := r.Level(slog.LevelInfo, "404", t0); level != slog.LevelInfo {
		t.Errorf("after reset: %s", level)
	}
	var zero Repeats // Every 0: DefaultRepeatEvery
	zero.Level(slog.LevelWarn, "x", t0)
	if level, _ := zero.Level(slog.LevelWarn, "x", t0.Add(DefaultRepeatEvery-time.Second)); level != slog.LevelDebug {
		t.Errorf("zero Repeats let a repeat through after %s", DefaultRepeatEvery-time.Second)
	}
}
