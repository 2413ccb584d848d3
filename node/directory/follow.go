package directory

import (
	"context"
	"errors"
)

// FollowOwn keeps a component in step with the node's own Things (the
// event fan-out, the MQTT gateway): it calls fn with every own live Thing
// and all set (Things fn holds that are not in the list are gone), then
// with each own Thing that is created, updated or removed (Tombstone set)
// and all unset, until ctx ends or the directory closes. Should the
// caller fall behind the events, it is called with the full list again.
// fn runs on the caller's goroutine, one call at a time; it returns ctx's
// error, or nil when the directory closed.
func (d *Directory) FollowOwn(ctx context.Context, fn func(entries []Entry, all bool)) error {
	for {
		// Subscribe before reading the list, so that no change falls
		// between the two.
		events, cancel, err := d.Subscribe("")
		if errors.Is(err, ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(d.Own(), true)
		overflow, err := d.followOwn(ctx, events, fn)
		cancel()
		if !overflow {
			return err
		}
	}
}

// followOwn hands fn the own Things of events until the channel closes
// (overflow reports whether it overflowed) or ctx ends.
func (d *Directory) followOwn(ctx context.Context, events <-chan Event, fn func([]Entry, bool)) (overflow bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-events:
			switch {
			case !ok:
				return false, nil
			case ev.Type == EventOverflow:
				return true, nil
			case ev.Publisher == d.self:
				fn([]Entry{ev.Entry}, false)
			}
		}
	}
}
