package directory

import (
	"fmt"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestCursorPaging walks listings page by page with Result.Next and
// checks that the pages together are the whole listing, in its order, in
// both orders (ByID and title/relevance), with text, with a publisher
// rank, and with the listing changing between pages.
func TestCursorPaging(t *testing.T) {
	f := newQueryFixture(t)
	pubs := []publisher{f.p1, f.p2, newPublisher(t, 4)}
	for i := range 40 {
		p := pubs[i%len(pubs)]
		// Titles that share their first 8 bytes, so the order needs the
		// whole title; ids shared between publishers.
		mustPut(t, f.d, p.sign(t, thingSpec{id: fmt.Sprintf("urn:c:%02d", i%17), title: fmt.Sprintf("Common title %d", i%7),
			description: "weather words", seq: 1}, t0), nil, Created)
	}
	rank := func(p peer.ID) int {
		if p == pubs[1].id {
			return 1
		}
		return 0
	}
	for _, q := range []Query{
		{ByID: true},
		{},
		{Text: "weather"},
		{Rank: rank},
		{ByID: true, Rank: rank, Type: "agent"},
	} {
		t.Run(fmt.Sprintf("byID=%v/text=%q/rank=%v", q.ByID, q.Text, q.Rank != nil), func(t *testing.T) {
			all, err := f.d.Search(q)
			if err != nil {
				t.Fatal(err)
			}
			var paged []string
			q.Limit = 3
			for pages := 0; ; pages++ {
				if pages > all.Total {
					t.Fatal("cursor paging does not end")
				}
				res, err := f.d.Search(q)
				if err != nil {
					t.Fatal(err)
				}
				if res.Total != all.Total {
					t.Fatalf("page %d: total %d, want %d", pages, res.Total, all.Total)
				}
				paged = append(paged, f.ids(res.Entries)...)
				if res.Next == "" {
					break
				}
				if want := q.CursorAfter(res.Entries[len(res.Entries)-1]); res.Next != want {
					t.Fatalf("Next %q, CursorAfter of the last entry %q", res.Next, want)
				}
				q.After = res.Next
			}
			if want := f.ids(all.Entries); !slices.Equal(paged, want) {
				t.Fatalf("paged\n%v\nwant\n%v", paged, want)
			}
		})
	}

	t.Run("changes between pages", func(t *testing.T) {
		q := Query{ByID: true, Limit: 5}
		first, err := f.d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		// The last Thing of the first page goes, and one is added before
		// the cursor: the next page is still what follows.
		last := first.Entries[len(first.Entries)-1]
		removeThing(t, f, last)
		mustPut(t, f.d, pubs[2].sign(t, thingSpec{id: "urn:a:first", seq: 1}, t0), nil, Created)
		q.After = first.Next
		next, err := f.d.Search(q)
		if err != nil {
			t.Fatal(err)
		}
		all, err := f.d.Search(Query{ByID: true})
		if err != nil {
			t.Fatal(err)
		}
		at := slices.IndexFunc(all.Entries, func(e Entry) bool {
			return e.ThingID > last.ThingID || (e.ThingID == last.ThingID && e.Publisher > last.Publisher)
		})
		if got, want := f.ids(next.Entries), f.ids(all.Entries[at:at+5]); !slices.Equal(got, want) {
			t.Fatalf("after a change: %v, want %v", got, want)
		}
	})

	for _, bad := range []Query{
		{After: "not base64!"},
		{After: "AQ"},
		{After: first(t, f.d, Query{ByID: true, Limit: 1}).Next}, // another order
		{After: first(t, f.d, Query{Limit: 1}).Next, ByID: true}, // another order
	} {
		if _, err := f.d.Search(bad); err == nil {
			t.Errorf("Search(After %q, ByID %v): no error", bad.After, bad.ByID)
		}
	}
}

func first(t *testing.T, d *Directory, q Query) Result {
	t.Helper()
	res, err := d.Search(q)
	if err != nil || res.Next == "" {
		t.Fatalf("Search: %v, no next page", err)
	}
	return res
}

// removeThing stores a tombstone for e.
func removeThing(t *testing.T, f queryFixture, e Entry) {
	t.Helper()
	for _, p := range []publisher{f.p0, f.p1, f.p2, newPublisher(t, 4)} {
		if p.id == e.Publisher {
			mustPut(t, f.d, p.tombstone(t, e.ThingID, e.Seq+1, t0), nil, Deleted)
			return
		}
	}
	t.Fatalf("no publisher for %s", e.Publisher)
}
