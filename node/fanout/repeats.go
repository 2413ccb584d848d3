package fanout

import (
	"log/slog"
	"time"
)

// repeats rate-limits a warning that keeps coming back the same: the first
// occurrence of a key is logged at info level, identical ones after it at
// debug level, except once every FeedWarnEvery, when the warning comes
// again at info level with the count of repeats it stood for. A different
// key, or reset, starts over. The zero value is ready; it is not safe for
// concurrent use (each publishing loop has its own).
type repeats struct {
	key    string
	logged time.Time // when key was last logged at info level
	n      int       // repeats since then
}

// note records one occurrence of key at now and returns the level to log
// it at and how many repeats were held back at debug level before it.
func (r *repeats) note(key string, now time.Time) (slog.Level, int) {
	if key != r.key || r.logged.IsZero() {
		*r = repeats{key: key, logged: now}
		return slog.LevelInfo, 0
	}
	r.n++
	if now.Sub(r.logged) < FeedWarnEvery {
		return slog.LevelDebug, r.n
	}
	n := r.n
	r.logged, r.n = now, 0
	return slog.LevelInfo, n
}

// reset forgets the last key.
func (r *repeats) reset() { *r = repeats{} }
