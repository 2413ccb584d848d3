package logroute

import (
	"log/slog"
	"time"
)

// DefaultRepeatEvery is how often Repeats lets an identical message
// through again by default.
const DefaultRepeatEvery = time.Hour

// Repeats rate-limits a log message that keeps coming back the same: the
// first occurrence of a key is logged at the caller's level, identical
// ones after it at debug level, except once every Every (default
// DefaultRepeatEvery), when the message comes again at the caller's level
// with the count of repeats it stood for. A different key, or Reset,
// starts over. The zero value is ready; a Repeats is not safe for
// concurrent use (give each loop its own).
type Repeats struct {
	// Every is how often an identical message is logged again at the
	// caller's level; 0 means DefaultRepeatEvery.
	Every time.Duration

	key    string
	logged time.Time // when key was last logged at the caller's level
	n      int       // repeats since then
}

// Level records one occurrence of key at now and returns the level to log
// it at (level, or slog.LevelDebug for a repeat held back) and how many
// repeats were held back at debug level before it.
func (r *Repeats) Level(level slog.Level, key string, now time.Time) (slog.Level, int) {
	every := r.Every
	if every <= 0 {
		every = DefaultRepeatEvery
	}
	if key != r.key || r.logged.IsZero() {
		r.key, r.logged, r.n = key, now, 0
		return level, 0
	}
	r.n++
	if now.Sub(r.logged) < every {
		return slog.LevelDebug, r.n
	}
	n := r.n
	r.logged, r.n = now, 0
	return level, n
}

// Reset forgets the last key: its next occurrence is news.
func (r *Repeats) Reset() { r.key, r.logged, r.n = "", time.Time{}, 0 }
