package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Reasons the validator refuses an event; wrapped with the details, so
// errors.Is tells them apart.
var (
	ErrTooLarge   = errors.New("event larger than the limit")
	ErrNotOwner   = errors.New("event published by another peer than the Thing's owner")
	ErrBadEvent   = errors.New("not a valid LMOS event message")
	ErrWrongThing = errors.New("event of another Thing than the topic's")
	ErrStale      = errors.New("event too old")
	ErrFuture     = errors.New("event timestamp in the future")
	ErrReplay     = errors.New("event already accepted")
)

// validator checks the messages of one events topic. It is safe for
// concurrent use (pubsub validates in parallel).
type validator struct {
	publisher peer.ID
	thingID   string
	cfg       Config
	now       func() time.Time

	mu      sync.Mutex
	seen    map[string]time.Time // accepted messageIDs → when they may be forgotten
	inserts int
}

func newValidator(publisher peer.ID, thingID string, cfg Config, now func() time.Time) *validator {
	return &validator{publisher: publisher, thingID: thingID, cfg: cfg, now: now, seen: map[string]time.Time{}}
}

// validate is the pubsub.ValidatorEx of the topic. An accepted message
// carries its decoded envelope in ValidatorData.
func (v *validator) validate(_ context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	m, res, _ := v.check(msg.GetFrom(), msg.GetData())
	if res == pubsub.ValidationAccept {
		msg.ValidatorData = m
	}
	return res
}

// check decides what validate answers for data authored by from.
func (v *validator) check(from peer.ID, data []byte) (*lmosproto.Message, pubsub.ValidationResult, error) {
	reject := func(err error) (*lmosproto.Message, pubsub.ValidationResult, error) {
		return nil, pubsub.ValidationReject, fmt.Errorf("thing %q of %s: %w", v.thingID, v.publisher, err)
	}
	if len(data) > v.cfg.MaxEventSize {
		return reject(fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), v.cfg.MaxEventSize))
	}
	if from != v.publisher {
		return reject(fmt.Errorf("%w: author %s", ErrNotOwner, from))
	}
	var m lmosproto.Message
	if err := lmosproto.JSON.Unmarshal(data, &m); err != nil {
		return reject(fmt.Errorf("%w: %w", ErrBadEvent, err))
	}
	if m.Type != lmosproto.MsgEvent {
		return reject(fmt.Errorf("%w: messageType %q", ErrBadEvent, m.Type))
	}
	if err := m.Validate(); err != nil {
		return reject(fmt.Errorf("%w: %w", ErrBadEvent, err))
	}
	if m.ThingID != v.thingID {
		return reject(fmt.Errorf("%w: thingID %q", ErrWrongThing, m.ThingID))
	}
	ts, err := lmosproto.ParseTimestamp(m.Timestamp)
	if err != nil {
		return reject(fmt.Errorf("%w: %w", ErrBadEvent, err))
	}
	now := v.now()
	if age := now.Sub(ts); age > v.cfg.MaxAge {
		return reject(fmt.Errorf("%w: %s old, the limit is %s", ErrStale, age.Round(time.Millisecond), v.cfg.MaxAge))
	}
	if ahead := ts.Sub(now); ahead > v.cfg.MaxSkew {
		return reject(fmt.Errorf("%w: %s ahead, the limit is %s", ErrFuture, ahead.Round(time.Millisecond), v.cfg.MaxSkew))
	}
	if !v.remember(m.MessageID, now) {
		return nil, pubsub.ValidationIgnore, fmt.Errorf("thing %q of %s: messageID %s: %w", v.thingID, v.publisher, m.MessageID, ErrReplay)
	}
	return &m, pubsub.ValidationAccept, nil
}

// remember records an accepted messageID for the freshness window and
// reports false if it was recorded already. Only the owner can produce
// messages that get this far, so the map grows only with the owner's own
// event rate; expired entries are swept every few hundred inserts.
func (v *validator) remember(id string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if until, ok := v.seen[id]; ok && now.Before(until) {
		return false
	}
	v.seen[id] = now.Add(v.cfg.MaxAge + v.cfg.MaxSkew)
	v.inserts++
	if v.inserts >= 256 {
		v.inserts = 0
		for k, until := range v.seen {
			if !now.Before(until) {
				delete(v.seen, k)
			}
		}
	}
	return true
}
