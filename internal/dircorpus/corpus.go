// Package dircorpus generates the synthetic federations the directory's
// benchmarks (node/directory) and the directory lab (scripts/lab.sh
// directory) run on: 200 publishers, 500 vendors, 2,000 capabilities
// (Zipf-popular, random versions), a 5,000-word Zipf vocabulary for
// titles, descriptions and examples, 10 % of the Things restricted to
// groups. The same calls give the same Things, in the same order.
//
// Next builds records without signing them (the benchmarks: Put trusts its
// caller to have verified a record, and signing a million TDs takes
// minutes); NextTD gives a TD for its publisher to sign, one a node
// serves.
package dircorpus

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Corpus generates Things deterministically.
type Corpus struct {
	// Words is the vocabulary, Caps the capability ids, Vendors the vendor
	// names; Zipf draws of the first two make a query mix.
	Words, Caps, Vendors []string
	// Publishers are the publishers' peer IDs, Keys their private keys.
	Publishers []peer.ID
	Keys       []ed25519.PrivateKey
	// Raw is the signed record every record of Next carries (its TD is
	// not the record's), and Created its proof time.
	Raw     []byte
	Created time.Time

	rng      *rand.Rand
	wordZipf *rand.Zipf
	capZipf  *rand.Zipf
	n        int
}

// New returns the corpus at its first Thing.
func New() (*Corpus, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Corpus{rng: rng}
	letters := "abcdefghijklmnopqrstuvwxyz"
	seen := map[string]bool{}
	for len(c.Words) < 5000 {
		b := make([]byte, 3+rng.IntN(8))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			c.Words = append(c.Words, w)
		}
	}
	c.wordZipf = rand.NewZipf(rng, 1.1, 1, uint64(len(c.Words)-1))
	for i := range 2000 {
		c.Caps = append(c.Caps, fmt.Sprintf("%s-%s-%d", c.Words[i%len(c.Words)], c.Words[(i*7+3)%len(c.Words)], i))
	}
	c.capZipf = rand.NewZipf(rng, 1.05, 10, uint64(len(c.Caps)-1))
	for i := range 500 {
		c.Vendors = append(c.Vendors, fmt.Sprintf("Vendor %s %d", c.Words[(i*13)%len(c.Words)], i))
	}
	for i := range 200 {
		seed := make([]byte, ed25519.SeedSize)
		seed[0], seed[1] = byte(i), byte(i>>8)
		key := ed25519.NewKeyFromSeed(seed)
		id, err := lmosproto.PeerIDFromEd25519(key.Public().(ed25519.PublicKey))
		if err != nil {
			return nil, fmt.Errorf("dircorpus: %w", err)
		}
		c.Publishers = append(c.Publishers, id)
		c.Keys = append(c.Keys, key)
	}
	return c, nil
}

// Word draws a word of the vocabulary.
func (c *Corpus) Word() string { return c.Words[c.wordZipf.Uint64()] }

// Capability draws a capability id.
func (c *Corpus) Capability() string { return c.Caps[c.capZipf.Uint64()] }

func (c *Corpus) sentence(min, max int) string {
	n := min + c.rng.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.Word()
	}
	return strings.Join(ws, " ")
}

// Next returns the record of a new Thing, unsigned: its TD holds the
// indexed fields, its Raw is c.Raw.
func (c *Corpus) Next() *lmosproto.Record {
	td, pub := c.next()
	return &lmosproto.Record{
		Raw:     c.Raw,
		TD:      td,
		ThingID: td.ID,
		Seq:     1,
		Signer:  lmosproto.Signer{PeerID: c.Publishers[pub], Created: c.Created},
	}
}

// NextTD returns the TD of a new Thing, the same Thing Next would have
// given, for its publisher to sign (proto.SignThing with key): base (a
// valid TD, with forms and security) with the corpus's id, title,
// description, type, vendor, capabilities and groups.
func (c *Corpus) NextTD(base *lmosproto.TD) (td *lmosproto.TD, key ed25519.PrivateKey) {
	gen, pub := c.next()
	td = base.Clone()
	td.ID, td.Title, td.Description, td.Types = gen.ID, gen.Title, gen.Description, gen.Types
	td.Capabilities, td.Groups, td.Seq = gen.Capabilities, gen.Groups, gen.Seq
	meta := lmosproto.Metadata{}
	if td.Metadata != nil {
		meta = *td.Metadata
	}
	meta.Vendor = gen.Metadata.Vendor
	td.Metadata = &meta
	return td, c.Keys[pub]
}

// next generates the indexed fields of a new Thing and picks its
// publisher (an index of Publishers).
func (c *Corpus) next() (*lmosproto.TD, int) {
	c.n++
	rng := c.rng
	td := &lmosproto.TD{
		ID:          fmt.Sprintf("urn:bench:%d", c.n),
		Title:       strings.ToUpper(c.Word()[:1]) + c.sentence(1, 3)[1:],
		Description: c.sentence(10, 25),
		Types:       []string{lmosproto.TypeAgent},
		Metadata:    &lmosproto.Metadata{Vendor: &lmosproto.Vendor{Name: c.Vendors[rng.IntN(len(c.Vendors))]}},
		Seq:         1,
	}
	if rng.IntN(10) < 4 {
		td.Types = []string{lmosproto.TypeTool}
	}
	for range 1 + rng.IntN(4) {
		cp := lmosproto.Capability{
			ID:          c.Capability(),
			Version:     fmt.Sprintf("%d.%d.%d", rng.IntN(4), rng.IntN(10), rng.IntN(10)),
			Description: c.sentence(5, 10),
		}
		for range rng.IntN(3) {
			cp.Examples = append(cp.Examples, c.sentence(5, 8))
		}
		td.Capabilities = append(td.Capabilities, cp)
	}
	if rng.IntN(10) == 0 {
		td.Groups = []string{fmt.Sprintf("group-%d", rng.IntN(50))}
	}
	return td, rng.IntN(len(c.Publishers))
}
