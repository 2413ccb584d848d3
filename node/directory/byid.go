package directory

import (
	"hash/maphash"
	"iter"
	"slices"
)

// idMap holds every entry of the directory by Thing id. It is the one
// table with an entry per Thing, so it keeps one pointer per slot and
// nothing else: slots is an open-addressing table (linear probing) of one
// entry per id, placed by a 64-bit hash of the id, whose probes compare
// the ids of the entries themselves; more holds, by id, the rare others
// (the same id from other publishers). Kept apart, many publishers of one
// id (sybils among them) make no long run in the table, which would slow
// the probes of other ids. An entry is in one of the two. Guarded as the
// directory's maps.
type idMap struct {
	hash  func(id string) uint64
	slots []*thing // a power of two long, or empty
	n     int      // entries in slots
	more  map[string][]*thing
}

// idMapMin is the length of an id map's first table.
const idMapMin = 16

func newIDMap(seed maphash.Seed) idMap {
	return idMap{hash: func(id string) uint64 { return maphash.String(seed, id) }, more: make(map[string][]*thing)}
}

// home is the slot where a probe for id starts. len(m.slots) > 0.
func (m *idMap) home(id string) int { return int(m.hash(id) & uint64(len(m.slots)-1)) }

// of yields the entries of id.
func (m *idMap) of(id string) iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		if i := m.find(id); i >= 0 && !yield(m.slots[i]) {
			return
		}
		for _, t := range m.more[id] {
			if !yield(t) {
				return
			}
		}
	}
}

// find returns the slot of id's entry in the table, -1 if it has none.
func (m *idMap) find(id string) int {
	if len(m.slots) == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := m.home(id); m.slots[i] != nil; i = (i + 1) & mask {
		if m.slots[i].id == id {
			return i
		}
	}
	return -1
}

// all yields every entry.
func (m *idMap) all() iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		for _, t := range m.slots {
			if t != nil && !yield(t) {
				return
			}
		}
		for _, list := range m.more {
			for _, t := range list {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// add adds t, which has no entry yet.
func (m *idMap) add(t *thing) {
	if m.find(t.id) >= 0 {
		m.more[t.id] = append(m.more[t.id], t)
		return
	}
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

// replace puts t in the place of old, an entry with the same id.
func (m *idMap) replace(old, t *thing) {
	if i := m.find(t.id); i >= 0 && m.slots[i] == old {
		m.slots[i] = t
		return
	}
	list := m.more[t.id]
	list[slices.Index(list, old)] = t
}

// remove removes t, an entry. In the table, the entries after it in its
// run move back into the gap when their home is not between the gap and
// where they are (backward-shift deletion), so that every probe still
// reaches them.
func (m *idMap) remove(t *thing) {
	i := m.find(t.id)
	if i < 0 || m.slots[i] != t {
		m.drop(t)
		return
	}
	mask := len(m.slots) - 1
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

// drop removes t from the others of its id.
func (m *idMap) drop(t *thing) {
	list := m.more[t.id]
	if i := slices.Index(list, t); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(m.more, t.id)
	} else {
		m.more[t.id] = list
	}
}
