package directory

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"unique"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A cursor (Query.After, Result.Next) is the sort key of the last entry
// of a page, so the next page is the results ordered after it: keyset
// paging. It is opaque to clients: base64url of a version byte, flags
// (ById, online), the publisher's rank, the free-text score, the title
// (not for ById), the publisher and the thing id. It stays valid while
// the directory changes: the next page starts after that key whether or
// not its entry is still held. Like any paging of a changing set, an
// entry whose rank or liveness changes between two pages may move across
// the cursor (be listed twice or not at all).

// cursorVersion is the first byte of every cursor.
const cursorVersion byte = 1

const (
	cursorByID byte = 1 << iota
	cursorOnline
)

var errCursor = errors.New("not a cursor of this directory")

// CursorAfter returns the cursor (Query.After) that continues q's listing
// after e, one of the entries q returned: e.g. the last one a client
// could send of a page cut short.
func (q Query) CursorAfter(e Entry) string {
	h := hit{t: &thing{publisher: unique.Make(e.Publisher), id: e.ThingID, title: e.Title}, online: e.Online, score: e.Score}
	if q.Rank != nil {
		h.rank = q.Rank(e.Publisher)
	}
	return encodeCursor(h, q.ByID)
}

func encodeCursor(h hit, byID bool) string {
	flags := byte(0)
	if byID {
		flags |= cursorByID
	}
	if h.online {
		flags |= cursorOnline
	}
	b := []byte{cursorVersion, flags}
	b = binary.AppendVarint(b, int64(h.rank))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(h.score))
	title := h.t.title
	if byID {
		title = ""
	}
	b = binary.AppendUvarint(b, uint64(len(title)))
	b = append(b, title...)
	b = binary.AppendUvarint(b, uint64(len(h.t.publisherID())))
	b = append(b, h.t.publisherID()...)
	b = append(b, h.t.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor is the hit a cursor was made from, for a query in the
// order byID says.
func decodeCursor(s string, byID bool) (hit, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != cursorVersion {
		return hit{}, errCursor
	}
	flags := b[1]
	if (flags&cursorByID != 0) != byID {
		return hit{}, errors.New("the cursor is of a listing in another order")
	}
	b = b[2:]
	rank, n := binary.Varint(b)
	if n <= 0 || len(b) < n+8 || rank != int64(int(rank)) {
		return hit{}, errCursor
	}
	b = b[n:]
	score := math.Float64frombits(binary.BigEndian.Uint64(b))
	b = b[8:]
	field := func() (string, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return "", false
		}
		f := string(b[n : n+int(l)])
		b = b[n+int(l):]
		return f, true
	}
	title, ok1 := field()
	pub, ok2 := field()
	if !ok1 || !ok2 || math.IsNaN(score) {
		return hit{}, errCursor
	}
	t := &thing{publisher: unique.Make(peer.ID(pub)), id: string(b), title: title}
	h := hit{t: t, rank: int(rank), online: flags&cursorOnline != 0, score: score, key: titleKey(title)}
	if byID {
		h.key = titleKey(t.id)
	}
	return h, nil
}
