package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Local is node-local metadata of one of the node's own Things. It is stored
// with the Thing but never published.
type Local struct {
	// Backend is the URL of the HTTP service that implements the Thing; the
	// node forwards calls to it.
	Backend string `json:"backend,omitempty"`
	// Kind is the kind of backend Backend names: empty for an HTTP
	// service, else a kind the node's own Things build a backend for
	// (own.Deps.Kinds, e.g. "a2a": Backend is an A2A agent's card URL).
	Kind string `json:"kind,omitempty"`
}

// Capability is the part of an lmos:capabilities element that the
// directory indexes.
type Capability struct {
	// ID is lmos:id.
	ID string
	// Version is lmos:version as published; empty if absent.
	Version string
}

// Entry is a snapshot of one (publisher, id) entry of the directory: the
// fields queries work on, its registration information and access to the
// signed record. Slices are shared with the directory and must not be
// modified.
type Entry struct {
	Publisher peer.ID
	ThingID   string
	// Seq is the record's lmos:seq.
	Seq uint64
	// Signed is the creation time of the record's proof; zero if it has none.
	Signed time.Time
	// Tombstone is set for a removed Thing (only Latest and OwnRecords
	// return tombstones).
	Tombstone bool
	// Own is set for the node's own Things.
	Own bool
	// Local is the node-local metadata of an own Thing; zero otherwise.
	Local Local

	Title        string
	Types        []string
	Vendor       string
	Capabilities []Capability
	// Groups are the groups the Thing is restricted to; nil if public.
	Groups []string

	// Created is when this node first registered the Thing, Modified when
	// its record last changed here, Expires when it will be dropped unless
	// seen again (zero: never, for own Things) and TTL the lifetime that
	// Expires was computed with.
	Created  time.Time
	Modified time.Time
	Expires  time.Time
	TTL      time.Duration

	// Online is set for an own Thing and for a learned one whose
	// publisher was seen within Config.OfflineAfter; LastSeen is when that
	// publisher was last seen (zero for own Things, or never).
	Online   bool
	LastSeen time.Time

	// Score is the free-text relevance of the Thing to a Search; 0 without
	// text.
	Score float64

	dir *Directory
	rec *lmosproto.Record
}

// entry snapshots t with its details (read from the datastore unless
// cached). Callers hold d.mu (read or write) or own t.
func (d *Directory) entry(t *thing, score float64) Entry {
	return d.entryWith(t, score, d.details(t))
}

// entryWith snapshots t with det; nil det leaves the fields it fills
// zero.
func (d *Directory) entryWith(t *thing, score float64, det *details) Entry {
	online, seen := d.liveness(t, d.now().UnixNano())
	e := Entry{
		Online:    online,
		LastSeen:  fromUnixNano(seen),
		Publisher: t.publisherID(),
		ThingID:   t.id,
		Seq:       t.seq,
		Signed:    fromUnixNano(t.signed),
		Tombstone: t.tombstone,
		Own:       t.own,
		Local:     t.localOf(),
		Title:     t.title,
		Groups:    t.groups(),
		Created:   fromUnixSec(t.created),
		Modified:  fromUnixSec(t.modified),
		Expires:   fromUnixSec(t.expires),
		TTL:       d.ttl(t),
		Score:     score,
		dir:       d,
	}
	if det != nil {
		e.Types, e.Vendor, e.Capabilities = det.types, det.vendor, det.caps
	}
	return e
}

// noDetails are the details of a tombstone, and of a Thing whose record
// cannot be read.
var noDetails = &details{}

// details returns what an entry of live thing t shows beyond t: from the
// cache of recently read ones, else from t's stored envelope (which then
// joins the cache). Records live in the datastore; this is the only read
// a query makes of it, for the entries of its page.
func (d *Directory) details(t *thing) *details {
	if t.tombstone {
		return noDetails
	}
	if det, ok := d.cache.Get(t); ok {
		return det
	}
	env, err := d.loadEnvelope(t.publisherID(), t.id)
	if err != nil || env.Tombstone {
		// Removed since t was taken (a snapshot outlives its record).
		return noDetails
	}
	det := d.detailsOf(&env.Summary)
	d.cache.Add(t, det)
	return det
}

// detailsOf is the details of a summary.
func (d *Directory) detailsOf(s *summary) *details {
	det := &details{types: internAll(s.Types), vendor: intern(s.Vendor)}
	if len(s.Capabilities) > 0 {
		det.caps = make([]Capability, len(s.Capabilities))
		det.versions = make([]*semver.Version, len(s.Capabilities))
		for i, c := range s.Capabilities {
			det.caps[i] = Capability{ID: intern(c.ID), Version: intern(c.Version)}
			det.versions[i] = d.version(c.Version)
		}
	}
	return det
}

// errNoRecord is returned by the record accessors of a zero Entry.
var errNoRecord = errors.New("directory: entry has no directory to read its record from")

// Raw returns the signed record exactly as published, for serving. It
// reads the record the directory holds now, which may be newer than the
// entry (an entry of an event carries its own record).
func (e Entry) Raw() ([]byte, error) {
	raw, _, err := e.Stored()
	return raw, err
}

// Stored is Raw and whether the record is a tombstone, for a caller that
// serves a page of records without parsing them (a Thing may have been
// removed since its entry was read).
func (e Entry) Stored() (raw []byte, tombstone bool, err error) {
	if e.rec != nil {
		return e.rec.Raw, e.rec.Tombstone(), nil
	}
	env, err := e.load()
	if err != nil {
		return nil, false, err
	}
	return env.Raw, env.Tombstone, nil
}

// Record returns the signed record with its parsed TD (nil for a
// tombstone). Like Raw it reads the record held now. The record is not
// verified again: it was when it was put.
func (e Entry) Record() (*lmosproto.Record, error) {
	if e.rec != nil {
		return e.rec, nil
	}
	env, err := e.load()
	if err != nil {
		return nil, err
	}
	return recordFromEnvelope(e.Publisher, &env)
}

// TD returns the parsed Thing Description of the entry's record; an error
// for a tombstone.
func (e Entry) TD() (*lmosproto.TD, error) {
	rec, err := e.Record()
	if err != nil {
		return nil, err
	}
	if rec.Tombstone() {
		return nil, fmt.Errorf("directory: thing %q of %s: removed at seq %d", rec.ThingID, e.Publisher, rec.Seq)
	}
	return rec.TD, nil
}

func (e Entry) load() (envelope, error) {
	if e.dir == nil {
		return envelope{}, errNoRecord
	}
	return e.dir.loadEnvelope(e.Publisher, e.ThingID)
}

// loadEnvelope reads the stored envelope of (publisher, id).
func (d *Directory) loadEnvelope(publisher peer.ID, id string) (envelope, error) {
	data, err := d.ds.Get(context.Background(), d.thingKey(publisher, id))
	if err != nil {
		return envelope{}, fmt.Errorf("directory: thing %q of %s: %w", id, publisher, err)
	}
	env, err := unmarshalEnvelope(data)
	if err != nil {
		return envelope{}, fmt.Errorf("directory: thing %q of %s: %w", id, publisher, err)
	}
	return env, nil
}

// recordFromEnvelope rebuilds the record that was verified when it was put,
// without verifying it again.
func recordFromEnvelope(publisher peer.ID, env *envelope) (*lmosproto.Record, error) {
	rec := &lmosproto.Record{Raw: env.Raw, ThingID: env.ThingID, Seq: env.Seq}
	var doc struct {
		Proof lmosproto.Proof `json:"proof"`
	}
	if err := json.Unmarshal(env.Raw, &doc); err != nil {
		return nil, fmt.Errorf("directory: thing %q of %s: stored record: %w", env.ThingID, publisher, err)
	}
	pub, err := lmosproto.Ed25519FromPeerID(publisher)
	if err != nil {
		return nil, fmt.Errorf("directory: thing %q of %s: %w", env.ThingID, publisher, err)
	}
	rec.Signer = lmosproto.Signer{
		DID:                lmosproto.DIDKey(pub),
		VerificationMethod: doc.Proof.VerificationMethod,
		PublicKey:          pub,
		PeerID:             publisher,
		Created:            env.Signed,
		Proof:              doc.Proof,
	}
	if !env.Tombstone {
		if rec.TD, err = lmosproto.ParseTD(env.Raw); err != nil {
			return nil, fmt.Errorf("directory: thing %q of %s: stored record: %w", env.ThingID, publisher, err)
		}
	}
	return rec, nil
}
