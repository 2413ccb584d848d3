package dht

import (
	"errors"
	"fmt"
	"time"

	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// Record freshness. A record's age is measured from its proof's "created"
// time, which the publisher sets when it signs (or re-signs) the record.
const (
	// RepublishInterval is how often a publisher re-signs each of its
	// records with a fresh "created" (same lmos:seq) and puts it again.
	// Kademlia forgets records as the peers holding them leave; putting
	// them again every 12 h stores them on the peers that are closest now.
	RepublishInterval = 12 * time.Hour
	// MaxRecordAge is the age after which a record is refused and dropped:
	// four republish intervals, so that a publisher that misses three
	// republications in a row (a node down for a day) keeps its Things in
	// the DHT, while the Things of a node that is gone for good leave it
	// within two days. It equals kad-dht's own limit on how long a peer
	// keeps a record it received (and on provider records), so the two
	// clocks agree.
	MaxRecordAge = 4 * RepublishInterval
	// MaxClockSkew is how far in the future a record's "created" may be.
	// Clocks of nodes in different organisations drift; NTP keeps them
	// within seconds, 5 minutes (as Kerberos allows) covers a badly set one
	// without letting a publisher pre-date records into the future to
	// outlive MaxRecordAge.
	MaxClockSkew = 5 * time.Minute
)

// Errors a ThingValidator wraps (together with the cause, if any), so that
// callers can tell why a record was refused with errors.Is. A bad key wraps
// ErrBadKey.
var (
	// ErrTooLarge: the record exceeds proto.MaxRecordSize.
	ErrTooLarge = errors.New("record too large")
	// ErrBadRecord: the record is malformed, its proof does not verify, or
	// it is not a valid TD or tombstone.
	ErrBadRecord = errors.New("bad record")
	// ErrWrongPublisher: the record is signed by a peer other than the
	// publisher its key names.
	ErrWrongPublisher = errors.New("record signed by another peer than the key's publisher")
	// ErrWrongThing: the record is about another Thing than its key names.
	ErrWrongThing = errors.New("record is about another thing than the key's")
	// ErrExpired: the record's proof was created more than MaxRecordAge ago.
	ErrExpired = errors.New("record expired")
	// ErrFuture: the record's proof was created more than MaxClockSkew in
	// the future.
	ErrFuture = errors.New("record created in the future")
	// ErrRetiredKey: the record's publisher key is revoked or rotated away
	// from (ThingValidator.Retired).
	ErrRetiredKey = errors.New("record signed by a retired key")
)

// ThingValidator is the record.Validator of the "lmos-td" namespace: it
// accepts a Thing record only under its own canonical key, signed by the
// publisher the key names, and fresh (see the package documentation). The
// zero value is ready to use with the defaults and the system clock. A
// ThingValidator is safe for concurrent use if Now is.
type ThingValidator struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxAge overrides MaxRecordAge when positive.
	MaxAge time.Duration
	// MaxSkew overrides MaxClockSkew when positive.
	MaxSkew time.Duration
	// Cache, if set, remembers the records already verified, so that the
	// same bytes are verified once (see RecordCache). Copies of the
	// validator share it.
	Cache *RecordCache
	// Retired, if set, reports why the key of a publisher no longer signs
	// records (a revocation, or a rotation away from it: docs/wire.md, "Key
	// rotation and revocation"), or nil if it does. Every record of a
	// retired key is refused, whatever its date: a leaked key can backdate.
	Retired func(peer.ID) error
}

var _ record.Validator = ThingValidator{}

// Validate reports whether value is a valid record for key. It is
// record.Validator's method; Check does the same and returns the record.
func (v ThingValidator) Validate(key string, value []byte) error {
	_, err := v.Check(key, value)
	return err
}

// Check validates value as the record under key and returns it parsed. The
// node uses it on what a DHT lookup returns: kad-dht hands back a locally
// stored value without validating it again, and the node needs the parsed
// record anyway.
func (v ThingValidator) Check(key string, value []byte) (*proto.Record, error) {
	publisher, thingID, err := ParseThingKey(key)
	if err != nil {
		return nil, err
	}
	return v.check(publisher, thingID, true, value)
}

// CheckFrom validates value as a record that publisher signed, about
// whichever Thing it names: Check without the key, so without the
// comparison of the record's id with one the caller read from the bytes
// first (a JSON decode of the whole record). The announce validator uses
// it: the gossip message's author must be the record's publisher.
func (v ThingValidator) CheckFrom(publisher peer.ID, value []byte) (*proto.Record, error) {
	return v.check(publisher, "", false, value)
}

// check is Check of the record of publisher's Thing thingID, or, without
// byID, of whichever Thing the record names.
func (v ThingValidator) check(publisher peer.ID, thingID string, byID bool, value []byte) (*proto.Record, error) {
	name := func() string {
		if byID {
			return shortKey(ThingKey(publisher, thingID))
		}
		return "record of " + publisher.String()
	}
	if v.Retired != nil {
		if err := v.Retired(publisher); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRetiredKey, name(), err)
		}
	}
	if len(value) > proto.MaxRecordSize {
		return nil, fmt.Errorf("%w: %s: %d bytes, the limit is %d", ErrTooLarge, name(), len(value), proto.MaxRecordSize)
	}
	rec, err := v.Cache.parse(value)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadRecord, name(), err)
	}
	if !byID {
		thingID, byID = rec.ThingID, true
	}
	if signer := rec.Publisher(); signer != publisher {
		return nil, fmt.Errorf("%w: %s: signed by %s, the key names %s", ErrWrongPublisher, name(), signer, publisher)
	}
	if rec.ThingID != thingID {
		return nil, fmt.Errorf("%w: %s: record id %q", ErrWrongThing, name(), shorten(rec.ThingID))
	}
	created := rec.Signer.Created
	if created.IsZero() {
		return nil, fmt.Errorf("%w: %s: proof has no \"created\" time, its age cannot be checked", ErrBadRecord, name())
	}
	now := v.now()
	if age := now.Sub(created); age > v.maxAge() {
		return nil, fmt.Errorf("%w: %s: created %s, %s ago, the limit is %s",
			ErrExpired, name(), created.UTC().Format(time.RFC3339), age.Round(time.Second), v.maxAge())
	}
	if ahead := created.Sub(now); ahead > v.maxSkew() {
		return nil, fmt.Errorf("%w: %s: created %s, %s ahead of this node's clock, the limit is %s",
			ErrFuture, name(), created.UTC().Format(time.RFC3339), ahead.Round(time.Second), v.maxSkew())
	}
	return rec, nil
}

// Select returns the index of the best of values, records under key: the
// newest valid one by proto.Record.Newer (highest lmos:seq; at equal seq the
// later proof, then a tombstone, then the greater bytes). Invalid values are
// skipped, so an expired record kept in a datastore gives way to a fresh
// one; Select fails only if no value is valid.
func (v ThingValidator) Select(key string, values [][]byte) (int, error) {
	best, bestIdx := (*proto.Record)(nil), -1
	var firstErr error
	for i, value := range values {
		rec, err := v.Check(key, value)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("value %d: %w", i, err)
			}
			continue
		}
		if bestIdx < 0 || rec.Newer(best) {
			best, bestIdx = rec, i
		}
	}
	if bestIdx < 0 {
		if firstErr == nil {
			return 0, fmt.Errorf("select %s: no values", shortKey(key))
		}
		return 0, fmt.Errorf("select %s: no valid value: %w", shortKey(key), firstErr)
	}
	return bestIdx, nil
}

func (v ThingValidator) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v ThingValidator) maxAge() time.Duration {
	if v.MaxAge > 0 {
		return v.MaxAge
	}
	return MaxRecordAge
}

func (v ThingValidator) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return MaxClockSkew
}
