package directory

import (
	"hash/maphash"
	"iter"
	"slices"
)

// idMap holds every entry of the directory by Thing id. It is the one map
// with an entry per Thing, so it keeps no id string and no slice per
// entry: first holds, by a 64-bit hash of the id, one entry; more holds,
// by id, the rare others (the same id from another publisher, or an id
// whose hash another id has). An entry is in one of the two. Guarded as
// the directory's maps.
type idMap struct {
	hash  func(id string) uint64
	first map[uint64]*thing
	more  map[string][]*thing
}

func newIDMap(seed maphash.Seed) idMap {
	return idMap{
		hash:  func(id string) uint64 { return maphash.String(seed, id) },
		first: make(map[uint64]*thing), more: make(map[string][]*thing),
	}
}

// of yields the entries of id.
func (m *idMap) of(id string) iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		if t := m.first[m.hash(id)]; t != nil && t.id == id && !yield(t) {
			return
		}
		for _, t := range m.more[id] {
			if !yield(t) {
				return
			}
		}
	}
}

// all yields every entry.
func (m *idMap) all() iter.Seq[*thing] {
	return func(yield func(*thing) bool) {
		for _, t := range m.first {
			if !yield(t) {
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
	h := m.hash(t.id)
	if m.first[h] == nil {
		m.first[h] = t
		return
	}
	m.more[t.id] = append(m.more[t.id], t)
}

// replace puts t in the place of old, an entry with the same id.
func (m *idMap) replace(old, t *thing) {
	if h := m.hash(t.id); m.first[h] == old {
		m.first[h] = t
		return
	}
	list := m.more[t.id]
	list[slices.Index(list, old)] = t
}

// remove removes t, an entry.
func (m *idMap) remove(t *thing) {
	if h := m.hash(t.id); m.first[h] == t {
		delete(m.first, h)
		return
	}
	m.drop(t.id, t)
}

// drop removes t from the others of id.
func (m *idMap) drop(id string, t *thing) {
	list := m.more[id]
	if i := slices.Index(list, t); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(m.more, id)
	} else {
		m.more[id] = list
	}
}
