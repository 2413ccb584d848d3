package groupsvc

import (
	"context"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/node/backoff"
)

// workSet is a set of group IDs waiting for a worker: adding an ID that
// waits already does nothing, so a burst of changes is one piece of work.
type workSet struct {
	mu     sync.Mutex
	ids    map[string]struct{}
	signal chan struct{}
}

func newWorkSet() *workSet {
	return &workSet{ids: map[string]struct{}{}, signal: make(chan struct{}, 1)}
}

// add queues id.
func (w *workSet) add(id string) {
	w.mu.Lock()
	w.ids[id] = struct{}{}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// next waits until IDs are queued, then debounce longer, and takes them;
// false when ctx ends.
func (w *workSet) next(ctx context.Context, debounce time.Duration) ([]string, bool) {
	select {
	case <-ctx.Done():
		return nil, false
	case <-w.signal:
	}
	if debounce > 0 {
		if !backoff.Sleep(ctx, debounce) {
			return nil, false
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	clear(w.ids)
	return ids, true
}
