package directory

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
)

// textList is the postings of one term of the text index: the slots of
// the Things that have it, ascending, each with its weighted term
// frequency. Most of the index's heap is these lists (tens of terms per
// Thing), so they are compressed: cut into chunks of at most chunkMax
// postings, each packed at widths of its own (frame of reference): two
// bytes give the widths in bits of the chunk's gaps and tfs (those of
// its largest), and then each posting takes
//
//	gap | tf << (gap width)
//
// in that many bits, little-endian, where the gap is the slot less the
// previous slot (the first posting counts from the chunk's first slot,
// so its gap is 0). A posting of the benchmark corpus takes 1.26 bytes
// with its chunk's header (uvarints took 1.51, a plain list five). A posting
// past the list's end (a new slot, the common case) is appended to the
// last chunk, in place unless it is wider than the chunk's widths (then
// the chunk is packed again); one in the middle (a slot freed and
// reused) rewrites its chunk, at most chunkMax postings.
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
	data  []byte // the widths of gaps and tfs, then the postings
}

const (
	// chunkMax is the most postings a chunk holds; a chunk that would
	// hold more is split in two.
	chunkMax = 128
	// chunkHeader is the bits before a chunk's postings: its widths.
	chunkHeader = 16
)

// posting is one decoded posting.
type posting struct {
	slot uint32
	tf   uint8
}

// getBits reads w (at most 57) bits at bit offset off of b.
func getBits(b []byte, off, w uint) uint64 {
	i := int(off >> 3)
	var x uint64
	if i+8 <= len(b) {
		x = binary.LittleEndian.Uint64(b[i:])
	} else {
		for j := len(b) - 1; j >= i; j-- {
			x = x<<8 | uint64(b[j])
		}
	}
	return x >> (off & 7) & (1<<w - 1)
}

// putBits writes v, w bits wide, at bit offset off of b (zero there),
// growing b as needed.
func putBits(b []byte, off, w uint, v uint64) []byte {
	for end := int((off + w + 7) >> 3); len(b) < end; {
		b = append(b, 0)
	}
	for w > 0 {
		i, s := off>>3, off&7
		k := min(w, 8-s)
		b[i] |= byte(v&(1<<k-1)) << s
		v, off, w = v>>k, off+k, w-k
	}
	return b
}

// widths returns the width of c's gaps and of its postings, in bits.
func (c *textChunk) widths() (gap, posting uint) {
	return uint(c.data[0]), uint(c.data[0]) + uint(c.data[1])
}

// pack is the bits of posting p after the slot prev, in a chunk whose
// gaps take gw bits.
func pack(p posting, prev uint32, gw uint) uint64 { return uint64(p.slot-prev) | uint64(p.tf)<<gw }

// unpack is the posting of bits v after the slot prev, in a chunk whose
// gaps take gw bits.
func unpack(v uint64, prev uint32, gw uint) posting {
	return posting{slot: prev + uint32(v&(1<<gw-1)), tf: uint8(v >> gw)}
}

// decode appends c's postings to out.
func (c *textChunk) decode(out []posting) []posting {
	gw, w := c.widths()
	prev, off := c.first, uint(chunkHeader)
	for range c.n {
		p := unpack(getBits(c.data, off, w), prev, gw)
		off += w
		prev = p.slot
		out = append(out, p)
	}
	return out
}

// encodeChunk makes a chunk of ps (sorted, at most chunkMax, not empty).
func encodeChunk(ps []posting) textChunk {
	var maxGap uint32
	var maxTF uint8
	prev := ps[0].slot
	for _, p := range ps {
		maxGap, maxTF = max(maxGap, p.slot-prev), max(maxTF, p.tf)
		prev = p.slot
	}
	gw, tw := uint(bits.Len32(maxGap)), uint(bits.Len8(maxTF))
	c := textChunk{first: ps[0].slot, n: uint16(len(ps))}
	c.data = make([]byte, chunkHeader/8, (chunkHeader+uint(len(ps))*(gw+tw)+7)/8)
	c.data[0], c.data[1] = byte(gw), byte(tw)
	off := uint(chunkHeader)
	prev = ps[0].slot
	for _, p := range ps {
		c.data = putBits(c.data, off, gw+tw, pack(p, prev, gw))
		off += gw + tw
		prev = p.slot
	}
	return c
}

// append adds p, past the chunk's last slot prev: in place if it fits
// the chunk's widths, else by packing the chunk again.
func (c *textChunk) append(prev uint32, p posting) {
	gap := p.slot - prev
	gw, w := c.widths()
	if uint(bits.Len32(gap)) > gw || uint(bits.Len8(p.tf)) > w-gw {
		var buf [chunkMax]posting
		*c = encodeChunk(append(c.decode(buf[:0]), p))
		return
	}
	c.data = putBits(c.data, chunkHeader+uint(c.n)*w, w, pack(p, prev, gw))
	c.n++
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
			last.append(l.last, p)
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
	off    uint // bit offset of the next posting in chunks[0].data
	gw, w  uint // chunks[0].widths
	left   uint16
	prev   uint32
	cur    posting
	ok     bool // cur is a posting; false once the list is done
}

func (l *textList) cursor() textCursor {
	c := textCursor{chunks: l.chunks}
	if len(c.chunks) > 0 {
		c.start()
	}
	c.next()
	return c
}

// start moves to the first posting of chunks[0].
func (c *textCursor) start() {
	ch := &c.chunks[0]
	c.off, c.left, c.prev = chunkHeader, ch.n, ch.first
	c.gw, c.w = ch.widths()
}

// next moves to the next posting.
func (c *textCursor) next() {
	for c.left == 0 {
		if len(c.chunks) <= 1 {
			c.chunks, c.ok = nil, false
			return
		}
		c.chunks = c.chunks[1:]
		c.start()
	}
	p := unpack(getBits(c.chunks[0].data, c.off, c.w), c.prev, c.gw)
	c.off += c.w
	c.cur, c.prev = p, p.slot
	c.left--
	c.ok = true
}
