package trust

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Level is the place of a publisher in the list.
type Level string

// The levels of Config.
const (
	Allow  Level = "allow"
	Prefer Level = "prefer"
	Deny   Level = "deny"
)

// ParseLevel returns the Level named s.
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case Allow, Prefer, Deny:
		return l, nil
	}
	return "", fmt.Errorf("trust level %q: want allow, prefer or deny", s)
}

// Mark is what a user is shown beside a publisher.
type Mark string

// The marks.
const (
	Own     Mark = "own"
	Trusted Mark = "trusted"
	Denied  Mark = "denied"
	Unknown Mark = "unknown"
)

// The ranks Rank returns.
const (
	RankDenied    = -1
	RankUnknown   = 0
	RankAllowed   = 1
	RankPreferred = 2
	RankOwn       = 3
)

// Config is the trust list as config.json holds it (the "trust" member):
// publishers by peer ID or did:key, and organisations by DID (did:web,
// did:wba) or domain ("example.com"), which apply to every publisher that
// proves membership (List.SetMembership).
type Config struct {
	// Allow are publishers the operator trusts: marked trusted; with
	// OnlyTrusted the only ones (with Prefer) whose records are taken.
	Allow []string `json:"allow,omitempty"`
	// Prefer are trusted publishers that win: when several publishers
	// have a Thing of one id, resolution picks the preferred one, and find
	// lists them first.
	Prefer []string `json:"prefer,omitempty"`
	// Deny are publishers whose records are dropped: not stored, not
	// relayed, not resolved, not called.
	Deny []string `json:"deny,omitempty"`
	// OnlyTrusted takes only the records of allowed and preferred
	// publishers (and the node's own). Off by default: an open
	// federation.
	OnlyTrusted bool `json:"onlyTrusted,omitempty"`
}

// Validate checks that every entry names a publisher or an organisation,
// once.
func (c Config) Validate() error {
	_, _, err := c.parse()
	return err
}

func (c Config) parse() (map[peer.ID]Level, map[string]Level, error) {
	levels, orgs := map[peer.ID]Level{}, map[string]Level{}
	var errs []error
	for _, l := range []struct {
		level Level
		ids   []string
	}{{Allow, c.Allow}, {Prefer, c.Prefer}, {Deny, c.Deny}} {
		for i, s := range l.ids {
			if org, ok := ParseOrganization(s); ok {
				if prev, dup := orgs[org]; dup {
					errs = append(errs, fmt.Errorf("%s[%d]: organisation %s is listed in %s already", l.level, i, org, prev))
					continue
				}
				orgs[org] = l.level
				continue
			}
			id, err := lmosproto.ParsePublisher(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w (nor an organisation DID or domain)", l.level, i, err))
				continue
			}
			if prev, dup := levels[id]; dup {
				errs = append(errs, fmt.Errorf("%s[%d]: %s is listed in %s already", l.level, i, id, prev))
				continue
			}
			levels[id] = l.level
		}
	}
	return levels, orgs, errors.Join(errs...)
}

// domainName is a lower-case DNS name with at least two labels.
var domainName = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ParseOrganization returns the trust list's form of an organisation
// entry: a did:web or did:wba DID as given, or a domain name lower-cased
// (a trailing dot dropped); false for anything else (a peer ID, a did:key,
// a short form never contains a dot).
func ParseOrganization(s string) (string, bool) {
	if strings.HasPrefix(s, "did:web:") || strings.HasPrefix(s, "did:wba:") {
		return s, len(s) > len("did:web:") && !strings.ContainsAny(s, "#?/ ")
	}
	d := strings.TrimSuffix(strings.ToLower(s), ".")
	return d, len(d) <= 253 && domainName.MatchString(d)
}

// Membership returns the organisation a publisher is a verified member
// of: its DID and domain, and false when it proves none.
type Membership func(p peer.ID) (did, domain string, ok bool)

// List is a live trust list.
type List struct {
	self peer.ID

	mu          sync.RWMutex
	levels      map[peer.ID]Level
	orgs        map[string]Level
	members     Membership
	onlyTrusted bool
}

// New returns the list of cfg for the node self (never denied, always own).
func New(self peer.ID, cfg Config) (*List, error) {
	levels, orgs, err := cfg.parse()
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	if levels[self] == Deny {
		return nil, fmt.Errorf("trust: deny: %s is this node", self)
	}
	return &List{self: self, levels: levels, orgs: orgs, onlyTrusted: cfg.OnlyTrusted}, nil
}

// SetMembership sets how the list learns which organisation a publisher
// is a verified member of; nil (the default) applies no organisation
// entry. It must not call back into the list.
func (l *List) SetMembership(m Membership) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.members = m
}

// Level returns p's own level, "" if unlisted (an organisation's level
// is not p's: see Effective).
func (l *List) Level(p peer.ID) Level {
	if l == nil {
		return ""
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.levels[p]
}

// Effective returns the level that applies to p: its own, else that of
// the organisation it is a verified member of (by DID, else by domain),
// "" if none.
func (l *List) Effective(p peer.ID) Level {
	if l == nil {
		return ""
	}
	l.mu.RLock()
	level, members, anyOrg := l.levels[p], l.members, len(l.orgs) > 0
	l.mu.RUnlock()
	if level != "" || members == nil || !anyOrg {
		return level
	}
	did, domain, ok := members(p)
	if !ok {
		return ""
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if level, ok := l.orgs[did]; ok {
		return level
	}
	return l.orgs[domain]
}

// OrganizationLevel returns the level of an organisation entry (a DID or
// domain in ParseOrganization's form), "" if unlisted.
func (l *List) OrganizationLevel(org string) Level {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.orgs[org]
}

// SetOrganization puts an organisation (DID or domain) at level.
func (l *List) SetOrganization(org string, level Level) error {
	if _, err := ParseLevel(string(level)); err != nil {
		return err
	}
	norm, ok := ParseOrganization(org)
	if !ok {
		return fmt.Errorf("trust: %q is neither a did:web / did:wba DID nor a domain name", org)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.orgs[norm] = level
	return nil
}

// RemoveOrganization takes an organisation off the list and reports
// whether it was on it.
func (l *List) RemoveOrganization(org string) bool {
	norm, _ := ParseOrganization(org)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.orgs[norm]
	delete(l.orgs, norm)
	return ok
}

// Mark returns the mark of p.
func (l *List) Mark(p peer.ID) Mark {
	if l != nil && p == l.self {
		return Own
	}
	switch l.Effective(p) {
	case Allow, Prefer:
		return Trusted
	case Deny:
		return Denied
	}
	return Unknown
}

// Rank orders publishers: higher is better (the Rank* constants).
func (l *List) Rank(p peer.ID) int {
	if l != nil && p == l.self {
		return RankOwn
	}
	switch l.Effective(p) {
	case Prefer:
		return RankPreferred
	case Allow:
		return RankAllowed
	case Deny:
		return RankDenied
	}
	return RankUnknown
}

// Admits reports whether records of p may enter the directory.
func (l *List) Admits(p peer.ID) bool {
	if l == nil || p == l.self {
		return true
	}
	switch l.Effective(p) {
	case Deny:
		return false
	case Allow, Prefer:
		return true
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return !l.onlyTrusted
}

// Set puts p at level, moving it from another level; the node itself
// cannot be denied.
func (l *List) Set(p peer.ID, level Level) error {
	if _, err := ParseLevel(string(level)); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if p == l.self && level == Deny {
		return fmt.Errorf("trust: deny: %s is this node", p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.levels[p] = level
	return nil
}

// Remove takes p off the list and reports whether it was on it.
func (l *List) Remove(p peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.levels[p]
	delete(l.levels, p)
	return ok
}

// Config returns the list as config.json holds it, each level sorted.
func (l *List) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	c := Config{OnlyTrusted: l.onlyTrusted}
	add := func(s string, level Level) {
		switch level {
		case Allow:
			c.Allow = append(c.Allow, s)
		case Prefer:
			c.Prefer = append(c.Prefer, s)
		case Deny:
			c.Deny = append(c.Deny, s)
		}
	}
	for p, level := range l.levels {
		add(p.String(), level)
	}
	for org, level := range l.orgs {
		add(org, level)
	}
	slices.Sort(c.Allow)
	slices.Sort(c.Prefer)
	slices.Sort(c.Deny)
	return c
}

// Move gives successor the level of old, a key rotated away from, and
// takes old off the list; it reports whether the list changed. A
// successor listed already keeps its own level.
func (l *List) Move(old, successor peer.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	level, ok := l.levels[old]
	if !ok || old == successor {
		return false
	}
	delete(l.levels, old)
	if _, listed := l.levels[successor]; !listed && (successor != l.self || level != Deny) {
		l.levels[successor] = level
	}
	return true
}
