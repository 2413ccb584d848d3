package directory

import (
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	datastore "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Datastore keys (see the package documentation).
var (
	keyRoot    = datastore.NewKey("/directory")
	keyVersion = keyRoot.ChildString("version")
	// keyRun is present between BeginRun and EndRun (see BeginRun).
	keyRun    = keyRoot.ChildString("run")
	keyThings = keyRoot.ChildString("things")
)

// layoutVersion is the value of keyVersion this code reads and writes.
const layoutVersion = "1"

// envelopeFormat is the first byte of every envelope.
const envelopeFormat byte = 1

// Envelope flags.
const (
	flagTombstone byte = 1 << iota
	flagOwn
)

// idEncoding encodes a thing id into one datastore key segment.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// thingKey is the datastore key of (publisher, id).
func thingKey(publisher peer.ID, id string) datastore.Key {
	return keyThings.ChildString(publisher.String()).ChildString(idEncoding.EncodeToString([]byte(id)))
}

// maxKeyPrefixes bounds the cache of publishers' key prefixes.
const maxKeyPrefixes = 4096

// thingKey is thingKey with the publisher's part (a base58 encoding,
// microseconds) cached.
func (d *Directory) thingKey(publisher peer.ID, id string) datastore.Key {
	d.keysMu.Lock()
	prefix, ok := d.keyPrefixes[publisher]
	if !ok {
		prefix = keyThings.String() + "/" + publisher.String() + "/"
		if len(d.keyPrefixes) >= maxKeyPrefixes {
			clear(d.keyPrefixes)
		}
		d.keyPrefixes[publisher] = prefix
	}
	d.keysMu.Unlock()
	return datastore.RawKey(prefix + idEncoding.EncodeToString([]byte(id)))
}

// parseThingKey is the inverse of thingKey.
func parseThingKey(k datastore.Key) (peer.ID, string, error) {
	rest, ok := strings.CutPrefix(k.String(), keyThings.String()+"/")
	if !ok {
		return "", "", fmt.Errorf("key %s: not below %s", k, keyThings)
	}
	pubStr, idStr, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(idStr, "/") {
		return "", "", fmt.Errorf("key %s: want %s/<peer ID>/<base32 id>", k, keyThings)
	}
	pub, err := peer.Decode(pubStr)
	if err != nil {
		return "", "", fmt.Errorf("key %s: publisher: %w", k, err)
	}
	id, err := idEncoding.DecodeString(idStr)
	if err != nil {
		return "", "", fmt.Errorf("key %s: thing id: %w", k, err)
	}
	return pub, string(id), nil
}

// summary is what the indexes need from a TD, stored beside it so that Open
// does not parse every TD.
type summary struct {
	Title        string
	Description  string
	Types        []string
	Vendor       string
	Capabilities []capSummary
	Groups       []string
}

// capSummary is what the indexes need from one lmos:capabilities element.
type capSummary struct {
	ID          string
	Version     string
	Description string
	Examples    []string
}

// summarize takes the indexed fields of td; nil (a tombstone) gives the zero
// summary.
func summarize(td *lmosproto.TD) summary {
	if td == nil {
		return summary{}
	}
	s := summary{
		Title:       td.Title,
		Description: td.Description,
		Types:       td.Types,
		Vendor:      td.Vendor(),
		Groups:      td.Groups,
	}
	if len(td.Capabilities) > 0 {
		s.Capabilities = make([]capSummary, len(td.Capabilities))
		for i, c := range td.Capabilities {
			s.Capabilities[i] = capSummary{ID: c.ID, Version: c.Version, Description: c.Description, Examples: c.Examples}
		}
	}
	return s
}

// envelope is the stored form of one (publisher, id) entry.
type envelope struct {
	Tombstone bool
	Own       bool
	Seq       uint64
	// Signed is the proof's creation time; zero if the proof has none.
	Signed   time.Time
	Created  time.Time
	Modified time.Time
	// Expires is zero for an entry that never expires.
	Expires time.Time
	TTL     time.Duration
	ThingID string
	Local   Local
	Summary summary
	// Raw is the signed record as published.
	Raw []byte
}

// marshal encodes e. The signed record comes last, unframed, so that it is
// not copied on decoding.
func (e *envelope) marshal() ([]byte, error) {
	var local []byte
	if e.Local != (Local{}) {
		var err error
		if local, err = json.Marshal(e.Local); err != nil {
			return nil, fmt.Errorf("envelope of %q: local: %w", e.ThingID, err)
		}
	}
	b := make([]byte, 0, 64+len(e.ThingID)+len(local)+summarySize(&e.Summary)+len(e.Raw))
	var flags byte
	if e.Tombstone {
		flags |= flagTombstone
	}
	if e.Own {
		flags |= flagOwn
	}
	b = append(b, envelopeFormat, flags)
	b = binary.AppendUvarint(b, e.Seq)
	b = binary.AppendVarint(b, unixNano(e.Signed))
	b = binary.AppendVarint(b, unixNano(e.Created))
	b = binary.AppendVarint(b, unixNano(e.Modified))
	b = binary.AppendVarint(b, unixNano(e.Expires))
	b = binary.AppendVarint(b, int64(e.TTL))
	b = appendString(b, e.ThingID)
	b = appendString(b, string(local))
	s := &e.Summary
	b = appendString(b, s.Title)
	b = appendString(b, s.Description)
	b = appendStrings(b, s.Types)
	b = appendString(b, s.Vendor)
	b = binary.AppendUvarint(b, uint64(len(s.Capabilities)))
	for _, c := range s.Capabilities {
		b = appendString(b, c.ID)
		b = appendString(b, c.Version)
		b = appendString(b, c.Description)
		b = appendStrings(b, c.Examples)
	}
	b = appendStrings(b, s.Groups)
	return append(b, e.Raw...), nil
}

// unmarshalEnvelope decodes an envelope. Raw aliases data.
func unmarshalEnvelope(data []byte) (envelope, error) {
	var e envelope
	d := decoder{buf: data}
	if format := d.byte("format"); d.err == nil && format != envelopeFormat {
		return e, fmt.Errorf("envelope: format %d, want %d", format, envelopeFormat)
	}
	flags := d.byte("flags")
	e.Tombstone, e.Own = flags&flagTombstone != 0, flags&flagOwn != 0
	e.Seq = d.uvarint("seq")
	e.Signed = fromUnixNano(d.varint("signed"))
	e.Created = fromUnixNano(d.varint("created"))
	e.Modified = fromUnixNano(d.varint("modified"))
	e.Expires = fromUnixNano(d.varint("expires"))
	e.TTL = time.Duration(d.varint("ttl"))
	e.ThingID = d.string("thing id")
	if local := d.string("local"); local != "" && d.err == nil {
		if err := json.Unmarshal([]byte(local), &e.Local); err != nil {
			return e, fmt.Errorf("envelope of %q: local: %w", e.ThingID, err)
		}
	}
	s := &e.Summary
	s.Title = d.string("title")
	s.Description = d.string("description")
	s.Types = d.strings("types")
	s.Vendor = d.string("vendor")
	if n := d.count("capabilities"); n > 0 {
		s.Capabilities = make([]capSummary, n)
		for i := range s.Capabilities {
			c := &s.Capabilities[i]
			c.ID = d.string("capability id")
			c.Version = d.string("capability version")
			c.Description = d.string("capability description")
			c.Examples = d.strings("capability examples")
		}
	}
	s.Groups = d.strings("groups")
	if d.err != nil {
		return e, fmt.Errorf("envelope of %q: %w", e.ThingID, d.err)
	}
	if e.ThingID == "" {
		return e, errors.New("envelope: thing id: empty")
	}
	if len(d.buf) == 0 {
		return e, fmt.Errorf("envelope of %q: record: empty", e.ThingID)
	}
	e.Raw = d.buf
	return e, nil
}

func summarySize(s *summary) int {
	n := len(s.Title) + len(s.Description) + len(s.Vendor) + 8
	for _, t := range s.Types {
		n += len(t) + 2
	}
	for _, g := range s.Groups {
		n += len(g) + 2
	}
	for _, c := range s.Capabilities {
		n += len(c.ID) + len(c.Version) + len(c.Description) + 8
		for _, x := range c.Examples {
			n += len(x) + 2
		}
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// unixNano maps the zero time to 0, so that "never" and "unknown" survive a
// round trip.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// unixSec is a registration time as a thing holds it: whole Unix
// seconds (the second it falls in), 0 for none. A uint32 lasts until 2106;
// a time before 1970 is held as 1970's first second.
func unixSec(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	return uint32(min(max(t.Unix(), 1), math.MaxUint32))
}

func fromUnixSec(s uint32) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(int64(s), 0).UTC()
}

// pastSec reports whether the time s (unixSec, 0 for never) has come at
// nowSec (Unix seconds: now/int64(time.Second), which a query computes
// once for all its candidates).
func pastSec(s uint32, nowSec int64) bool { return s != 0 && int64(s) <= nowSec }

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// decoder reads envelope fields; the first error sticks and names the field.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(field, msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %s", field, msg)
	}
	d.buf = nil
}

func (d *decoder) byte(field string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) == 0 {
		d.fail(field, "truncated")
		return 0
	}
	c := d.buf[0]
	d.buf = d.buf[1:]
	return c
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail(field, "bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint(field string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail(field, "bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// count reads a list length, bounded by the bytes left (every element takes
// at least one byte), so a corrupt length cannot allocate much.
func (d *decoder) count(field string) int {
	n := d.uvarint(field)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.buf)) {
		d.fail(field, fmt.Sprintf("length %d exceeds the %d bytes left", n, len(d.buf)))
		return 0
	}
	return int(n)
}

func (d *decoder) string(field string) string {
	n := d.count(field)
	if d.err != nil {
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) strings(field string) []string {
	n := d.count(field)
	if d.err != nil || n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.string(field)
	}
	if d.err != nil {
		return nil
	}
	return ss
}
