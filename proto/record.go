package proto

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// MaxRecordSize bounds a signed record on every path it travels (DHT value,
// gossip message, sync reply): a TD plus its proof.
const MaxRecordSize = MaxTDSize + 4<<10

// A Record is one publisher's signed statement about one Thing: either the
// Thing's signed TD or a signed tombstone that removes it. Records are what
// nodes store, announce and exchange; a Thing is identified by
// (Publisher, ThingID) and its versions are ordered by Seq.
//
// A Record is immutable once made; it is safe to share between goroutines.
type Record struct {
	// Raw is the signed document exactly as published: what goes on the
	// wire and into the DHT, and what any third party can verify.
	Raw []byte
	// TD is the parsed Thing Description; nil for a tombstone.
	TD *TD
	// ThingID is the TD's id (or the tombstone's).
	ThingID string
	// Seq is lmos:seq.
	Seq uint64
	// Signer is the publisher, as the proof names and verifies it.
	Signer Signer
}

// Tombstone reports whether the record removes its Thing.
func (r *Record) Tombstone() bool { return r.TD == nil }

// Publisher is the peer ID of the record's signer.
func (r *Record) Publisher() peer.ID { return r.Signer.PeerID }

// Newer reports whether r supersedes o, a record of the same Thing: a higher
// sequence number wins; at equal sequence numbers a tombstone wins (a delete
// is final for its sequence number), then the later proof (a republication),
// then the greater bytes, so every node picks the same record whatever order
// they arrive in.
func (r *Record) Newer(o *Record) bool {
	if o == nil {
		return true
	}
	if r.Seq != o.Seq {
		return r.Seq > o.Seq
	}
	if r.Tombstone() != o.Tombstone() {
		return r.Tombstone()
	}
	if !r.Signer.Created.Equal(o.Signer.Created) {
		return r.Signer.Created.After(o.Signer.Created)
	}
	return bytes.Compare(r.Raw, o.Raw) > 0
}

// tombstone is the signed document that removes a Thing. It is not a TD: it
// carries only what a node needs to drop the Thing and to refuse the
// versions before it.
type tombstone struct {
	Context   json.RawMessage `json:"@context"`
	ID        string          `json:"id"`
	Tombstone bool            `json:"lmos:tombstone"`
	Seq       uint64          `json:"lmos:seq"`
	Proof     json.RawMessage `json:"proof,omitempty"`
}

// SignThing signs td as its publisher's record. td must have an id and be a
// valid TD; its proof is replaced. The sequence number is td.Seq as given:
// callers that publish a new version increment it first. A td that uses an
// lmos: term (lmos:seq, which a published version always has) but does not
// bind the "lmos" prefix gets the binding appended to its @context first
// (TD.BindLMOS), so that a plain TD 1.1 document signs into a valid,
// self-consistent record; td itself is not modified.
func SignThing(td *TD, key ed25519.PrivateKey, now time.Time) (*Record, error) {
	if td.ID == "" {
		return nil, errors.New("sign thing: /id: a published Thing needs an id")
	}
	unsigned := td.Clone()
	unsigned.Proof = nil
	ctx, err := unsigned.BindLMOS()
	if err != nil {
		return nil, fmt.Errorf("sign thing %q: %w", td.ID, err)
	}
	unsigned.Context = ctx
	doc, err := json.Marshal(unsigned)
	if err != nil {
		return nil, fmt.Errorf("sign thing %q: %w", td.ID, err)
	}
	if err := ValidateTD(doc); err != nil {
		return nil, fmt.Errorf("sign thing %q: %w", td.ID, err)
	}
	signed, err := SignDocument(doc, key, now)
	if err != nil {
		return nil, fmt.Errorf("sign thing %q: %w", td.ID, err)
	}
	// The proof is verified again, but not the schema: the signed
	// document is doc, just validated, with the proof SignDocument added.
	return parseRecord(signed, true)
}

// SignTombstone signs the removal of thingID at sequence number seq, which
// must be higher than that of every version it replaces.
func SignTombstone(thingID string, seq uint64, key ed25519.PrivateKey, now time.Time) (*Record, error) {
	if thingID == "" {
		return nil, errors.New("sign tombstone: /id: empty thing id")
	}
	if len(thingID) > MaxIDLength {
		return nil, fmt.Errorf("sign tombstone: /id: %s", idTooLong(len(thingID)))
	}
	doc, err := json.Marshal(tombstone{Context: LMOSContext(), ID: thingID, Tombstone: true, Seq: seq})
	if err != nil {
		return nil, fmt.Errorf("sign tombstone %q: %w", thingID, err)
	}
	signed, err := SignDocument(doc, key, now)
	if err != nil {
		return nil, fmt.Errorf("sign tombstone %q: %w", thingID, err)
	}
	return ParseRecord(signed)
}

// ParseRecord checks a signed record from anywhere (a peer, the DHT, a file)
// and returns it: the size is bounded, the proof must verify, and the
// document must be a valid TD with an id or a well-formed tombstone.
func ParseRecord(raw []byte) (*Record, error) {
	return parseRecord(raw, false)
}

// parseRecord is ParseRecord; schemaChecked skips the TD's JSON Schema
// validation, for a document validated before it was signed.
func parseRecord(raw []byte, schemaChecked bool) (*Record, error) {
	if len(raw) > MaxRecordSize {
		return nil, fmt.Errorf("record: %d bytes exceeds the limit of %d", len(raw), MaxRecordSize)
	}
	signer, err := VerifyDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	var probe struct {
		Tombstone json.RawMessage `json:"lmos:tombstone"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	rec := &Record{Raw: bytes.Clone(raw), Signer: signer}
	if probe.Tombstone != nil {
		var ts tombstone
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ts); err != nil {
			return nil, fmt.Errorf("record: tombstone: %w", err)
		}
		if !ts.Tombstone {
			return nil, errors.New("record: /lmos:tombstone: must be true when present")
		}
		if ts.ID == "" {
			return nil, errors.New("record: /id: tombstone without a thing id")
		}
		if len(ts.ID) > MaxIDLength {
			return nil, fmt.Errorf("record: /id: %s", idTooLong(len(ts.ID)))
		}
		rec.ThingID, rec.Seq = ts.ID, ts.Seq
		return rec, nil
	}
	if !schemaChecked {
		if err := ValidateTD(raw); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}
	td, err := ParseTD(raw)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if td.ID == "" {
		return nil, errors.New("record: /id: a published Thing needs an id")
	}
	rec.TD, rec.ThingID, rec.Seq = td, td.ID, td.Seq
	return rec, nil
}
