package aicatalog

import (
	"os"
	"slices"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"

	"github.com/lmosnode/lmosnode/internal/dircorpus"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestMatchPages: the search's matches, asked of the directory in pages,
// are the first n of what filtering every match gives, also when the
// filter passes few of them (more pages) and when fewer than n pass.
func TestMatchPages(t *testing.T) {
	c, err := dircorpus.New()
	if err != nil {
		t.Fatal(err)
	}
	// The records of Next carry the signed bytes of one Thing.
	raw, err := os.ReadFile("../../examples/things/weather-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	base, err := lmosproto.ParseTD(raw)
	if err != nil {
		t.Fatal(err)
	}
	td, key := c.NextTD(base)
	rec, err := lmosproto.SignThing(td, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c.Raw, c.Created = rec.Raw, rec.Signer.Created
	d, err := directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: c.Publishers[0]}, directory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 3 {
		var recs []*lmosproto.Record
		for range 1000 {
			recs = append(recs, c.Next())
		}
		if _, err := d.PutMany(recs); err != nil {
			t.Fatal(err)
		}
	}
	h := &Handler{deps: Deps{Directory: d, Visible: func(directory.Entry) bool { return true }}}
	text := c.Words[0] + " " + c.Words[1]
	every, err := d.Search(directory.Query{Text: text})
	if err != nil || every.Total < 500 {
		t.Fatalf("%d matches, %v", every.Total, err)
	}
	for _, f := range []filter{
		{},
		{"type": {TypeServerCard}},
		{"capabilities": {c.Caps[0], c.Caps[1]}},
		{"publisher": {c.Publishers[3].String()}},
		{"metadata." + MetaThingID: {"urn:none"}},
	} {
		want := filterEntries(every.Entries, f, h, map[[2]string]bool{})
		for _, n := range []int{1, 11, 65, 300, len(want) + 1} {
			got := h.match(directory.Query{Text: text}, f, n)
			if len(got) < min(n, len(want)) || len(got) > len(want) || !slices.EqualFunc(got, want[:len(got)], func(a, b directory.Entry) bool {
				return a.Publisher == b.Publisher && a.ThingID == b.ThingID
			}) {
				t.Errorf("filter %v, n %d: %d matches, not the first of the %d wanted", f, n, len(got), len(want))
			}
		}
	}
}
