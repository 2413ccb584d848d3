package trustapi

import "github.com/lmosnode/lmosnode/node/trust"

// Entry is one publisher, or one organisation, of the trust list.
type Entry struct {
	// Publisher is the peer ID ("" for an organisation).
	Publisher string `json:"publisher,omitempty"`
	// Short is its short form (proto.ShortPublisher), which the CLI shows
	// and takes back.
	Short string `json:"short,omitempty"`
	// Organization is an organisation's DID or domain ("" for a
	// publisher): its level applies to every publisher that proves
	// membership (docs/identity.md).
	Organization string `json:"organization,omitempty"`
	// Level is allow, prefer or deny.
	Level string `json:"level"`
}

// List is the body of GET /api/v1/trust and of the answers to its
// changes.
type List struct {
	// Entries are the listed publishers: denied, preferred, allowed, each
	// by peer ID.
	Entries []Entry `json:"entries"`
	// OnlyTrusted: only the records of listed, non-denied publishers are
	// taken (config.json's trust.onlyTrusted).
	OnlyTrusted bool `json:"onlyTrusted"`
	// Dropped is how many records of the publisher a deny removed from the
	// directory; only in the answer to that change.
	Dropped int `json:"dropped,omitempty"`
}

// Request is the body of PUT /api/v1/trust/{publisher}.
type Request struct {
	// Level is allow, prefer or deny.
	Level string `json:"level"`
}

// Marks returns the mark of each publisher in the list l, for a client
// that shows results: trusted for allowed and preferred ones, denied for
// denied ones; publishers not in it are unknown (or own, which the client
// knows).
func (l List) Marks() map[string]trust.Mark {
	m := make(map[string]trust.Mark, len(l.Entries))
	for _, e := range l.Entries {
		if e.Publisher == "" {
			continue
		}
		switch trust.Level(e.Level) {
		case trust.Allow, trust.Prefer:
			m[e.Publisher] = trust.Trusted
		case trust.Deny:
			m[e.Publisher] = trust.Denied
		}
	}
	return m
}
