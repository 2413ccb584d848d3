package groups

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// bitset is a set of entry indexes.
type bitset []uint64

func (b bitset) has(i int) bool { return i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0 }

func (b *bitset) set(i int) {
	for len(*b) <= i/64 {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b *bitset) or(c bitset) {
	for len(*b) < len(c) {
		*b = append(*b, 0)
	}
	for i, w := range c {
		(*b)[i] |= w
	}
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// entry is an accepted operation with its place in the DAG.
type entry struct {
	op       *Op
	idx      int // order of acceptance in this Log (parents come first)
	pos      int // position in the fold order
	parents  []*entry
	children []*entry
	anc      bitset // indexes of all ancestors, not self
	ancCount int
}

// Log is a group's operation log: a hash-linked DAG rooted at the genesis,
// holding only operations accepted by rules 1–4, plus a bounded buffer of
// operations waiting for their parents. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	id      string
	entries []*entry
	byID    map[string]*entry
	heads   map[string]*entry
	strikes map[peer.ID][]*entry // remove/revoke of a peer, leave by it
	revokes map[string][]*entry  // uninvites by invitation ID
	size    int                  // bytes of Marshal
	signed  map[string]bool      // IDs made by Sign

	pending map[string]*Op      // held operations by ID
	held    []string            // held operation IDs, oldest first (may name ones no longer held)
	waiting map[string][]string // missing parent ID → held operation IDs

	order   []*entry // fold order
	state   State    // the fold of every entry, valid if stateOK
	eff     []bool   // by entry index: had effect, valid if stateOK
	stateOK bool
}

// NewLog starts the log of the group genesis founds.
func NewLog(genesis *Op) (*Log, error) {
	genesis, err := verify(genesis)
	if err != nil {
		return nil, err
	}
	if genesis.Kind != KindGenesis {
		return nil, fmt.Errorf("%w: new log: %s operation is not a genesis", ErrBadChain, genesis.Kind)
	}
	l := &Log{
		id:      genesis.ID,
		byID:    make(map[string]*entry),
		heads:   make(map[string]*entry),
		strikes: make(map[peer.ID][]*entry),
		revokes: make(map[string][]*entry),
		signed:  make(map[string]bool),
		pending: make(map[string]*Op),
		waiting: make(map[string][]string),
		size:    2, // "[]"
	}
	l.insert(&entry{op: genesis})
	return l, nil
}

// ID returns the group ID.
func (l *Log) ID() string { return l.id }

// insert makes e part of the log and keeps the cached fold current.
func (l *Log) insert(e *entry) {
	e.idx = len(l.entries)
	descends := e.ancCount == len(l.entries) // from every entry
	l.entries = append(l.entries, e)
	l.byID[e.op.ID] = e
	for _, p := range e.parents {
		p.children = append(p.children, e)
		delete(l.heads, p.op.ID)
	}
	l.heads[e.op.ID] = e
	strike := true
	switch e.op.Kind {
	case KindRemove, KindRevoke:
		l.strikes[e.op.Peer] = append(l.strikes[e.op.Peer], e)
	case KindLeave:
		l.strikes[e.op.Author] = append(l.strikes[e.op.Author], e)
	case KindUninvite: // voids concurrent adds that use the invitation
		l.revokes[e.op.InvitationID] = append(l.revokes[e.op.InvitationID], e)
	default:
		strike = false
	}
	if len(l.entries) > 1 {
		l.size++ // ","
	}
	l.size += len(e.op.Raw)
	at := l.place(e)
	if l.stateOK && at == len(l.order)-1 && (descends || !strike) {
		// e comes last in the fold and voids no earlier operation (it is
		// no remove, revoke, leave or uninvite concurrent with one), so the earlier
		// effects stand; apply e alone.
		l.eff = append(l.eff, l.apply(&l.state, e, all))
	} else {
		l.stateOK = false
	}
}

func all(*entry) bool { return true }

// current makes l.state and l.eff current.
func (l *Log) current() {
	if !l.stateOK {
		l.state, l.eff = l.replay(all, true)
		l.stateOK = true
	}
}

// Add accepts op (rules 1–4); if parents are missing it is held (bounded by
// MaxPending: when full, the operation held longest is dropped) and applied
// when they arrive. It returns the ops that became
// part of the log (op and any held ones it unblocked, in order); (nil, nil)
// for a duplicate or a held op.
func (l *Log) Add(op *Op) ([]*Op, error) {
	op, err := verify(op)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.add(op, true)
}

func (l *Log) add(op *Op, hold bool) ([]*Op, error) {
	if _, ok := l.byID[op.ID]; ok {
		return nil, nil
	}
	if _, ok := l.pending[op.ID]; ok {
		return nil, nil
	}
	if op.Kind == KindGenesis || op.Group != l.id {
		return nil, fmt.Errorf("%w: operation %s belongs to group %s, not %s", ErrWrongGroup, op.ID, op.Group, l.id)
	}
	var missing []string
	for _, p := range op.Parents {
		if _, ok := l.byID[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		if !hold {
			return nil, fmt.Errorf("%w: operation %s: parent %s is not in the log", ErrBadChain, op.ID, missing[0])
		}
		for len(l.pending) >= MaxPending {
			l.evictOldest()
		}
		l.pending[op.ID] = op
		l.held = append(l.held, op.ID)
		for _, p := range missing {
			l.waiting[p] = append(l.waiting[p], op.ID)
		}
		return nil, nil
	}
	if err := l.accept(op); err != nil {
		return nil, err
	}
	added := []*Op{op}
	// Apply held operations that op (or one they unblocked) completes.
	for i := 0; i < len(added); i++ {
		ids := l.waiting[added[i].ID]
		delete(l.waiting, added[i].ID)
		for _, id := range ids {
			held, ok := l.pending[id]
			if !ok || !l.hasParents(held) {
				continue
			}
			delete(l.pending, id)
			if l.accept(held) == nil {
				added = append(added, held)
			}
		}
	}
	return added, nil
}

// evictOldest drops the operation held longest, so that operations nobody
// completes (junk with made-up parents, which anyone can send) cannot keep
// newer ones out; a dropped operation comes back with the next sync.
func (l *Log) evictOldest() {
	for len(l.held) > 0 {
		id := l.held[0]
		l.held = l.held[1:]
		if op, ok := l.pending[id]; ok {
			delete(l.pending, id)
			for _, p := range op.Parents {
				if w := slices.DeleteFunc(l.waiting[p], func(x string) bool { return x == id }); len(w) > 0 {
					l.waiting[p] = w
				} else {
					delete(l.waiting, p)
				}
			}
			break
		}
	}
	if len(l.held) > 2*MaxPending { // forget IDs that are no longer held
		l.held = slices.DeleteFunc(l.held, func(id string) bool { _, ok := l.pending[id]; return !ok })
	}
}

func (l *Log) hasParents(op *Op) bool {
	for _, p := range op.Parents {
		if _, ok := l.byID[p]; !ok {
			return false
		}
	}
	return true
}

// accept checks rules 3 and 4 for op, whose parents are all in the log, and
// inserts it.
func (l *Log) accept(op *Op) error {
	if len(l.entries) >= MaxLogOps {
		return fmt.Errorf("%w: the log has %d operations, the limit", ErrLogFull, MaxLogOps)
	}
	if l.size+1+len(op.Raw) > MaxLogSize {
		return fmt.Errorf("%w: the log would exceed %d bytes", ErrLogFull, MaxLogSize)
	}
	e := &entry{op: op}
	for _, id := range op.Parents {
		p := l.byID[id]
		if op.Created.Before(p.op.Created) {
			return fmt.Errorf("%w: operation %s created %s, before its parent %s (%s)", ErrBadChain,
				op.ID, op.Created.Format(time.RFC3339), p.op.ID, p.op.Created.Format(time.RFC3339))
		}
		e.parents = append(e.parents, p)
		e.anc.or(p.anc)
		e.anc.set(p.idx)
	}
	e.ancCount = e.anc.count()
	var st State
	if e.ancCount == len(l.entries) {
		l.current()
		st = l.state
	} else {
		st, _ = l.replay(func(x *entry) bool { return e.anc.has(x.idx) }, false)
	}
	entitled := st.IsAdmin(op.Author)
	if op.Kind == KindLeave {
		entitled = st.IsMember(op.Author)
	}
	if !entitled {
		role := "an admin"
		if op.Kind == KindLeave {
			role = "a member"
		}
		return fmt.Errorf("%w: %s operation %s: its author %s is not %s in its causal past", ErrNotAuthorized, op.Kind, op.ID, op.Author, role)
	}
	l.insert(e)
	return nil
}

// Merge adds every operation of o to l (a union) and returns those new to l.
func (l *Log) Merge(o *Log) ([]*Op, error) {
	if o.ID() != l.ID() {
		return nil, fmt.Errorf("%w: merge log of %s into %s", ErrWrongGroup, o.ID(), l.ID())
	}
	ops := o.Ops()
	l.mu.Lock()
	defer l.mu.Unlock()
	var added []*Op
	var errs []error
	for _, op := range ops[1:] {
		a, err := l.add(op, true)
		if err != nil {
			errs = append(errs, err)
		}
		added = append(added, a...)
	}
	return added, errors.Join(errs...)
}

// Sign makes an operation from d on top of the log's heads, signed with key
// at now (or at the latest parent's created time, if that is later, so rule
// 3 holds). It does NOT add it. Two operations made by Sign never share an
// ID: if d would repeat one, it gets a nonce.
func (l *Log) Sign(key ed25519.PrivateKey, d Draft, now time.Time) (*Op, error) {
	if d.Kind == KindGenesis {
		return nil, fmt.Errorf("%w: sign: a genesis starts a new group (use Genesis)", ErrBadOp)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := opWire{Type: typeOp, Group: l.id, Kind: d.Kind, Role: d.Role, Things: scopeDigests(l.id, d.Things),
		Name: d.Name, Policy: d.Policy, InvitationID: d.InvitationID}
	if d.Invitation != nil {
		w.Invitation = d.Invitation.Raw // the signed part: never the secret
	}
	if d.Peer != "" {
		w.Peer = d.Peer.String()
	}
	for id, h := range l.heads {
		w.Parents = append(w.Parents, id)
		if h.op.Created.After(now) {
			now = h.op.Created
		}
	}
	slices.Sort(w.Parents)
	op, err := signOp(key, w, now)
	if err != nil {
		return nil, err
	}
	if l.signed[op.ID] || l.byID[op.ID] != nil {
		if w.Nonce, err = newNonce(); err != nil {
			return nil, err
		}
		if op, err = signOp(key, w, now); err != nil {
			return nil, err
		}
	}
	l.signed[op.ID] = true
	return op, nil
}

// Heads returns the IDs of the operations that no other names as parent,
// sorted.
func (l *Log) Heads() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.headIDs()
}

func (l *Log) headIDs() []string {
	out := make([]string, 0, len(l.heads))
	for id := range l.heads {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Ops returns the operations in fold order (the genesis first).
func (l *Log) Ops() []*Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Op, len(l.order))
	for i, e := range l.order {
		out[i] = e.op
	}
	return out
}

// Effective reports whether the operation is in the log and had effect in
// the fold.
func (l *Log) Effective(opID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byID[opID]
	if !ok {
		return false
	}
	l.current()
	return l.eff[e.idx]
}

// State returns the group's current state (a copy).
func (l *Log) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current()
	s := l.state.clone()
	s.Heads = l.headIDs()
	s.Ops = len(l.entries)
	return s
}

// Has reports whether the operation is in the log (held ones are not).
func (l *Log) Has(opID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.byID[opID]
	return ok
}

// Pending returns the number of operations held for missing parents.
func (l *Log) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// Marshal returns the DHT value and persistence form of the log: a JSON
// array of the signed operations in fold order.
func (l *Log) Marshal() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	b.Grow(l.size)
	b.WriteByte('[')
	for i, e := range l.order {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.op.Raw)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// ParseLog checks a log record of group groupID as the DHT validator does:
// the size, every operation by rules 1–4 with every parent earlier in the
// list, the genesis first with groupID as its ID, no duplicates, and the
// operations in fold order.
func ParseLog(groupID string, data []byte) (*Log, error) {
	return parseLog(groupID, data, nil)
}

// parseLog is ParseLog with the operations parsed through cache (nil:
// none).
func parseLog(groupID string, data []byte, cache *OpCache) (*Log, error) {
	if len(data) > MaxLogSize {
		return nil, fmt.Errorf("%w: log of %d bytes, the limit is %d", ErrTooLarge, len(data), MaxLogSize)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%w: log: %w", ErrBadChain, err)
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("%w: empty log", ErrBadChain)
	}
	if len(raws) > MaxLogOps {
		return nil, fmt.Errorf("%w: log of %d operations, the limit is %d", ErrTooLarge, len(raws), MaxLogOps)
	}
	ops, err := parseOps(raws, cache)
	if err != nil {
		return nil, err
	}
	if ops[0].Kind != KindGenesis {
		return nil, fmt.Errorf("%w: log[0] is a %s operation, not the genesis", ErrBadChain, ops[0].Kind)
	}
	if ops[0].ID != groupID {
		return nil, fmt.Errorf("%w: log[0] is the genesis of %s, not of %s", ErrWrongGroup, ops[0].ID, groupID)
	}
	l, err := NewLog(ops[0])
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, op := range ops[1:] {
		if _, ok := l.byID[op.ID]; ok || op.Kind == KindGenesis && op.ID == groupID {
			return nil, fmt.Errorf("%w: log[%d] %s", ErrDuplicate, i+1, op.ID)
		}
		if _, err := l.add(op, false); err != nil {
			return nil, fmt.Errorf("log[%d]: %w", i+1, err)
		}
	}
	for i, e := range l.order {
		if e.op.ID != ops[i].ID {
			return nil, fmt.Errorf("%w: log[%d] is %s, the fold order puts %s there", ErrBadChain, i, ops[i].ID, e.op.ID)
		}
	}
	return l, nil
}

// parseOps parses raws with ParseOp through cache (nil: none), on every
// CPU (signature checks are most of the cost of ParseLog), and returns the
// first error by index.
func parseOps(raws []json.RawMessage, cache *OpCache) ([]*Op, error) {
	ops := make([]*Op, len(raws))
	errs := make([]error, len(raws))
	workers := min(runtime.GOMAXPROCS(0), (len(raws)+31)/32)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(raws) {
					return
				}
				ops[i], errs[i] = cache.ParseOp(raws[i])
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("log[%d]: %w", i, err)
		}
	}
	return ops, nil
}

// Invitations returns the invitations that add operations of the log
// embed (valid ones, each once, in fold order of their first add); they
// carry no secret.
func (l *Log) Invitations() []*Invitation {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Invitation
	seen := map[string]bool{}
	for _, e := range l.order {
		if inv := e.op.inv; inv != nil && !seen[inv.ID] {
			seen[inv.ID] = true
			out = append(out, inv)
		}
	}
	return out
}
