package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/logroute"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// publishing is one own Thing whose events the Fanout publishes.
type publishing struct {
	thingID string
	j       *joined
	cancel  context.CancelFunc
	done    chan struct{}
	ends    *logroute.Repeats // the Thing's, kept across versions (Fanout.feedEnds)
}

// Publish starts fanning out the events of the own Thing td: the Fanout
// subscribes to all its events through Deps.Local and publishes each on
// the Thing's topic, until Unpublish or Close. A Thing without events needs
// nothing and is ignored; a Thing restricted to groups is refused with
// ErrGroupScoped. Publishing a Thing again is a no-op.
func (f *Fanout) Publish(td *lmosproto.TD) error {
	if td == nil || td.ID == "" {
		return errors.New("fanout: Publish: TD without id")
	}
	if len(td.Groups) > 0 {
		return fmt.Errorf("thing %q: %w", td.ID, ErrGroupScoped)
	}
	if len(td.Events) == 0 {
		return nil
	}
	if f.p.Local == nil {
		return fmt.Errorf("fanout: Publish: thing %q: no local Invoker (Deps.Local)", td.ID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.published[td.ID] != nil {
		return nil
	}
	j, err := f.joinLocked(f.p.Self, td.ID)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(f.ctx)
	ends := f.feedEnds[td.ID]
	if ends == nil {
		ends = &logroute.Repeats{Every: FeedWarnEvery}
		f.feedEnds[td.ID] = ends
	}
	pb := &publishing{thingID: td.ID, j: j, cancel: cancel, done: make(chan struct{}), ends: ends}
	f.published[td.ID] = pb
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(pb.done)
		f.publishLoop(ctx, pb)
	}()
	return nil
}

// Unpublish stops fanning out the events of the own Thing thingID and
// leaves its topic (unless local subscribers still use it).
func (f *Fanout) Unpublish(thingID string) error {
	f.mu.Lock()
	pb := f.published[thingID]
	if pb == nil || f.closed {
		f.mu.Unlock()
		return nil
	}
	delete(f.published, thingID)
	f.mu.Unlock()
	pb.cancel()
	<-pb.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.releaseLocked(pb.j)
}

// maxRetry caps the pause between attempts to subscribe to a Thing whose
// feed keeps failing (a backend that is down).
const maxRetry = time.Minute

// publishLoop subscribes to all events of the Thing and publishes them,
// subscribing again when the feed ends: after Retry, growing (node/backoff)
// after every attempt that published nothing, up to a minute.
func (f *Fanout) publishLoop(ctx context.Context, pb *publishing) {
	retry := backoff.New(f.cfg.Retry, max(maxRetry, f.cfg.Retry))
	for {
		if f.publishFeed(ctx, pb) {
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry.NextBackOff()):
		}
	}
}

// publishFeed runs one subscribeAllEvents session until it ends and
// reports whether it published any event.
func (f *Fanout) publishFeed(ctx context.Context, pb *publishing) (published bool) {
	req := lmosproto.NewMessage(pb.thingID, lmosproto.MsgSubscribeAllEvents)
	s, err := f.p.Local.Invoke(ctx, req)
	if err != nil {
		f.log.Warn("subscribe to own thing's events", "thing", pb.thingID, "err", err)
		return false
	}
	defer func() { _ = s.Close() }() // an engine session's Close never fails
	for m := range s.Replies() {
		if published {
			f.mu.Lock()
			pb.ends.Reset() // the feed worked: its next end is news
			f.mu.Unlock()
		}
		if m.Type != lmosproto.MsgEvent {
			if ctx.Err() == nil {
				f.mu.Lock()
				level, repeated := pb.ends.Level(slog.LevelInfo, m.Status+" "+m.Title+" "+m.Detail, f.now())
				f.mu.Unlock()
				f.log.Log(ctx, level, "own thing's event feed ended", "thing", pb.thingID, "reply", m, "repeated", repeated)
			}
			return published
		}
		f.publishEvent(ctx, pb, m)
		published = true
	}
	return published
}

// publishEvent publishes one event of the engine on the Thing's topic.
func (f *Fanout) publishEvent(ctx context.Context, pb *publishing, m *lmosproto.Message) {
	m = m.Clone()
	if m.Timestamp == "" {
		m.Timestamp = lmosproto.FormatTimestamp(f.now())
	}
	data, err := lmosproto.JSON.Marshal(m)
	if err != nil {
		f.log.Warn("encode event", "thing", pb.thingID, "event", m.Name, "err", err)
		return
	}
	if len(data) > f.cfg.MaxEventSize {
		f.log.Warn("event too large to fan out; dropped", "thing", pb.thingID, "event", m.Name, "size", len(data), "limit", f.cfg.MaxEventSize)
		return
	}
	if err := pb.j.topic.Publish(ctx, data); err != nil && ctx.Err() == nil {
		f.log.Warn("publish event", "thing", pb.thingID, "event", m.Name, "err", err)
	}
}
