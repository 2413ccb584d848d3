package datastore

import (
	"fmt"
	"log/slog"
)

// pebbleLogger adapts slog to pebble's Logger interface.
type pebbleLogger struct{ log *slog.Logger }

// Infof logs at debug: pebble reports routine events ("Found 0 WALs").
func (p pebbleLogger) Infof(format string, args ...any) {
	p.log.Debug("pebble", "detail", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.log.Error("pebble", "detail", fmt.Sprintf(format, args...))
}

// Fatalf is called by pebble on states it cannot continue from (on-disk
// corruption, violated invariants); pebble requires that it not return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.log.Error("pebble fatal", "detail", msg)
	panic("pebble: " + msg)
}
