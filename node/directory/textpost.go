package directory

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// textList is the postings of one term of the text index: the slots of
// the Things that have it, ascending, each with its weighted term
// frequency. Most of the index's heap is these lists (tens of terms per
// Thing), so they are compressed: cut into chunks of at most chunkMax
// postings, each a run of uvarints, one per posting, of
//
//	(slot − previous slot) << tfBits | tf
//
// (the first posting of a chunk counts from the chunk's first slot, so
// its gap is 0), where a tf of tfEscape or more is written as tfEscape
// and followed by a byte with the tf. A posting of a common term (a gap
// under 16, a tf under 7) takes one byte where a plain list took five.
// A posting past the list's end (a new slot, the common case) appends to
// the last chunk; one in the middle (a slot freed and reused) rewrites
// its chunk, at most chunkMax postings.
type textList struct {
	chunks []textChunk
	n      int    // postings in all chunks
	last   uint32 // the last posting's slot, if n > 0
}

// textChunk is a run of postings: 32 bytes with the slice header (the
// list keeps its last slot, not each chunk; there are ~0.4 chunks per
// Thing).
type textChunk struct {
	first uint32 // the first slot
	n     uint16 // postings
	data  []byte
}

const (
	// chunkMax is the most postings a chunk holds; a chunk that would
	// hold more is split in two.
	chunkMax = 128
	tfBits   = 3
	tfEscape = 1<<tfBits - 1
)

// posting is one decoded posting.
type posting struct {
	slot uint32
	tf   uint8
}

// appendPosting encodes p after prev.
func appendPosting(b []byte, prev uint32, p posting) []byte {
	t := uint64(min(p.tf, tfEscape))
	b = binary.AppendUvarint(b, uint64(p.slot-prev)<<tfBits|t)
	if t == tfEscape {
		b = append(b, p.tf)
	}
	return b
}

// nextPosting decodes the posting at b[i:] after prev and returns it with
// the offset of the next.
func nextPosting(b []byte, i int, prev uint32) (posting, int) {
	v := uint64(b[i])
	if v < 0x80 { // one byte: most postings
		i++
	} else {
		var k int
		v, k = binary.Uvarint(b[i:])
		i += k
	}
	p := posting{slot: prev + uint32(v>>tfBits), tf: uint8(v & tfEscape)}
	if p.tf == tfEscape {
		p.tf = b[i]
		i++
	}
	return p, i
}

// decode appends c's postings to out.
func (c *textChunk) decode(out []posting) []posting {
	prev, i := c.first, 0
	for range c.n {
		var p posting
		p, i = nextPosting(c.data, i, prev)
		out = append(out, p)
		prev = p.slot
	}
	return out
}

// encodeChunk makes a chunk of ps (sorted, at most chunkMax, not empty).
func encodeChunk(ps []posting) textChunk {
	c := textChunk{first: ps[0].slot, n: uint16(len(ps))}
	var buf [chunkMax * (binary.MaxVarintLen64 + 1)]byte
	b, prev := buf[:0], ps[0].slot
	for _, p := range ps {
		b = appendPosting(b, prev, p)
		prev = p.slot
	}
	c.data = slices.Clone(b)
	return c
}

// search is slices.BinarySearch for slot in ps, sorted by slot.
func search(ps []posting, slot uint32) (int, bool) {
	return slices.BinarySearchFunc(ps, slot, func(q posting, s uint32) int { return cmp.Compare(q.slot, s) })
}

// chunkOf returns the index of the chunk slot belongs in: the last one
// whose first slot is at most slot (0 if none is).
func (l *textList) chunkOf(slot uint32) int {
	i, found := slices.BinarySearchFunc(l.chunks, slot, func(c textChunk, s uint32) int { return cmp.Compare(c.first, s) })
	if found || i == 0 {
		return i
	}
	return i - 1
}

// insert adds slot with its tf; a slot already in the list keeps its
// posting.
func (l *textList) insert(slot uint32, tf uint8) {
	p := posting{slot, tf}
	if len(l.chunks) == 0 {
		l.chunks = []textChunk{encodeChunk([]posting{p})}
		l.n, l.last = 1, slot
		return
	}
	last := &l.chunks[len(l.chunks)-1]
	if slot > l.last {
		if last.n < chunkMax {
			last.data = appendPosting(last.data, l.last, p)
			last.n++
			if last.n == chunkMax {
				// Full: no more appends, so no room kept for them.
				last.data = slices.Clone(last.data)
			}
		} else {
			l.chunks = append(l.chunks, encodeChunk([]posting{p}))
		}
		l.n, l.last = l.n+1, slot
		return
	}
	i := l.chunkOf(slot)
	var buf [chunkMax + 1]posting
	ps := l.chunks[i].decode(buf[:0])
	j, found := search(ps, slot)
	if found {
		return
	}
	ps = slices.Insert(ps, j, p)
	l.n++
	if len(ps) <= chunkMax {
		l.chunks[i] = encodeChunk(ps)
		return
	}
	h := len(ps) / 2
	l.chunks[i] = encodeChunk(ps[:h])
	l.chunks = slices.Insert(l.chunks, i+1, encodeChunk(ps[h:]))
}

// remove drops slot from the list, if it is there.
func (l *textList) remove(slot uint32) {
	if len(l.chunks) == 0 {
		return
	}
	i := l.chunkOf(slot)
	c := &l.chunks[i]
	if slot < c.first || slot > l.last {
		return
	}
	var buf [chunkMax]posting
	ps := c.decode(buf[:0])
	j, found := search(ps, slot)
	if !found {
		return
	}
	ps = slices.Delete(ps, j, j+1)
	l.n--
	if len(ps) == 0 {
		l.chunks = slices.Delete(l.chunks, i, i+1)
		if len(l.chunks) == 0 {
			l.chunks = nil
		}
	} else {
		l.chunks[i] = encodeChunk(ps)
	}
	if slot == l.last && l.n > 0 {
		// The last posting went: the list's last is now its last chunk's.
		ps = l.chunks[len(l.chunks)-1].decode(buf[:0])
		l.last = ps[len(ps)-1].slot
	}
}

// textCursor walks a textList in slot order.
type textCursor struct {
	chunks []textChunk
	i      int // offset of the next posting in chunks[0].data
	left   uint16
	prev   uint32
	cur    posting
	ok     bool // cur is a posting; false once the list is done
}

func (l *textList) cursor() textCursor {
	c := textCursor{chunks: l.chunks}
	if len(c.chunks) > 0 {
		c.left, c.prev = c.chunks[0].n, c.chunks[0].first
	}
	c.next()
	return c
}

// next moves to the next posting.
func (c *textCursor) next() {
	for c.left == 0 {
		if len(c.chunks) <= 1 {
			c.chunks, c.ok = nil, false
			return
		}
		c.chunks = c.chunks[1:]
		c.i, c.left, c.prev = 0, c.chunks[0].n, c.chunks[0].first
	}
	c.cur, c.i = nextPosting(c.chunks[0].data, c.i, c.prev)
	c.prev = c.cur.slot
	c.left--
	c.ok = true
}
