package fanout

import (
	"errors"
	"slices"

	"github.com/lmosnode/lmosnode/node/directory"
)

// Follow keeps the fan-out in step with the node's own Things in dir
// until Close: every own Thing with events is published (again, on each
// new version, which may name other events), a removed one unpublished.
// It returns at once; the work runs on a goroutine the Fanout owns.
func (f *Fanout) Follow(dir *directory.Directory) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.wg.Go(func() {
		if err := dir.FollowOwn(f.ctx, f.follow); err != nil && f.ctx.Err() == nil {
			f.log.Warn("follow own things", "err", err)
		}
	})
	return nil
}

// follow applies a change of the own Things (directory.FollowOwn).
func (f *Fanout) follow(entries []directory.Entry, all bool) {
	if all {
		f.mu.Lock()
		var gone []string
		for id := range f.published {
			if !slices.ContainsFunc(entries, func(e directory.Entry) bool { return e.ThingID == id }) {
				gone = append(gone, id)
			}
		}
		f.mu.Unlock()
		for _, id := range gone {
			f.unpublish(id)
			f.forgetFeed(id)
		}
	}
	for _, e := range entries {
		f.unpublish(e.ThingID)
		if e.Tombstone {
			f.forgetFeed(e.ThingID)
			continue
		}
		td, err := e.TD()
		if err != nil {
			f.log.Warn("own thing unreadable", "thing", e.ThingID, "err", err)
			continue
		}
		if err := f.Publish(td); err != nil && !errors.Is(err, ErrGroupScoped) && !errors.Is(err, ErrClosed) {
			f.log.Warn("publish own thing's events", "thing", e.ThingID, "err", err)
		}
	}
}

// forgetFeed drops the log state of a removed own Thing's feed.
func (f *Fanout) forgetFeed(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.feedEnds, id)
}

func (f *Fanout) unpublish(id string) {
	if err := f.Unpublish(id); err != nil && !errors.Is(err, ErrClosed) {
		f.log.Warn("unpublish own thing's events", "thing", id, "err", err)
	}
}
