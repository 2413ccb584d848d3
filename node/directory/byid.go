package directory

import (
	"hash/maphash"
	"iter"
)

// idMap holds every entry of the directory by Thing id. It is the one
// table with an entry per Thing, so it keeps one pointer per slot and
// nothing else: an open-addressing table (linear probing) of the entries,
// placed by a 64-bit hash of their id, whose probes compare the ids of
// the entries themselves. Entries with the same id (from other
// publishers) sit in the same run of slots. Guarded as the directory's
// maps.
type idMap struct {
	hash  func(id string) uint64
	slots []*thing // a power of two long, or empty
	n     int
}

// idMapMin is the length of an id map's first table.
const idMapMin = 16

func newIDMap(seed maphash.Seed) idMap {
	return idMap{hash: func(id string) uint64 { return maphash.String(seed, id) }}
}

// home is the slot where a probe for id starts. len(m.slots) > 0.
func (m *idMap) home(id string) int { return int(m.hash(id) & uint64(len(m.slots)-1)) }

// of yields the entries of id.
func (m *idMap) of(id string) iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		if len(m.slots) == 0 {
			return
		}
		mask := len(m.slots) - 1
		for i := m.home(id); m.slots[i] != nil; i = (i + 1) & mask {
			if t := m.slots[i]; t.id == id && !yield(t) {
				return
			}
		}
	}
}

// all yields every entry.
func (m *idMap) all() iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		for _, t := range m.slots {
			if t != nil && !yield(t) {
				return
			}
		}
	}
}

// add adds t, which has no entry yet.
func (m *idMap) add(t *thing) {
	// At most 7/8 full, as Go's maps.
	if (m.n+1)*8 > len(m.slots)*7 {
		m.grow()
	}
	m.put(t)
	m.n++
}

// put places t in the first free slot from its home.
func (m *idMap) put(t *thing) {
	mask := len(m.slots) - 1
	i := m.home(t.id)
	for m.slots[i] != nil {
		i = (i + 1) & mask
	}
	m.slots[i] = t
}

// grow doubles the table.
func (m *idMap) grow() {
	old := m.slots
	m.slots = make([]*thing, max(idMapMin, 2*len(old)))
	for _, t := range old {
		if t != nil {
			m.put(t)
		}
	}
}

// index returns the slot of t, which must be an entry.
func (m *idMap) index(t *thing) int {
	mask := len(m.slots) - 1
	i := m.home(t.id)
	for m.slots[i] != t {
		if m.slots[i] == nil {
			panic("directory: id map: not an entry: " + t.id)
		}
		i = (i + 1) & mask
	}
	return i
}

// replace puts t in the place of old, an entry with the same id.
func (m *idMap) replace(old, t *thing) { m.slots[m.index(old)] = t }

// remove removes t, an entry. The entries after it in its run move back
// into the gap when their home is not between the gap and where they are
// (backward-shift deletion), so that every probe still reaches them.
func (m *idMap) remove(t *thing) {
	mask := len(m.slots) - 1
	i := m.index(t)
	for j := (i + 1) & mask; m.slots[j] != nil; j = (j + 1) & mask {
		k := m.home(m.slots[j].id)
		// Stays if its home k is in the cyclic interval (i, j].
		if i <= j && i < k && k <= j || i > j && (k > i || k <= j) {
			continue
		}
		m.slots[i] = m.slots[j]
		i = j
	}
	m.slots[i] = nil
	m.n--
}
