package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The directory's admin routes (package tdd).
const (
	thingsPath  = "/api/v1/things"
	peersPath   = "/api/v1/peers"
	connectPath = "/api/v1/connect"
	// listingPath is the directory's listing, GET /things.
	listingPath = "/things"
)

// Publish publishes td (a TD document) as one of the node's own Things.
// backend nil keeps the backend URL stored for the Thing, "" clears it.
func (c *Client) Publish(ctx context.Context, td []byte, backend *string) (tdd.PublishResult, error) {
	return call[tdd.PublishResult](ctx, c, request{method: http.MethodPost, path: thingsPath,
		body: tdd.PublishRequest{TD: td, Backend: backend}, max: maxTDPage})
}

// Own returns the node's own Things.
func (c *Client) Own(ctx context.Context) ([]tdd.ThingInfo, error) {
	return call[[]tdd.ThingInfo](ctx, c, request{method: http.MethodGet, path: thingsPath, max: maxTDPage})
}

// RemoveThing removes the node's own Thing id.
func (c *Client) RemoveThing(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: thingsPath + "/" + url.PathEscape(id)})
	return err
}

// Peers returns the peers the node knows.
func (c *Client) Peers(ctx context.Context) ([]tdd.Peer, error) {
	return call[[]tdd.Peer](ctx, c, request{method: http.MethodGet, path: peersPath})
}

// Connect asks the node to connect to the peer at addr, a multiaddr ending
// in /p2p/<peer ID>.
func (c *Client) Connect(ctx context.Context, addr string) (tdd.Peer, error) {
	return call[tdd.Peer](ctx, c, request{method: http.MethodPost, path: connectPath, body: tdd.ConnectRequest{Addr: addr}})
}

// FindQuery are the filters of Find; zero fields do not filter (see GET
// /things).
type FindQuery struct {
	Type       string
	Capability string // id or id@semver-range
	Vendor     string
	Publisher  string // peer ID or did:key
	Group      string
	Text       string
	// Online selects the Things whose publisher is online.
	Online bool
	// Cursor continues a listing after the page whose FindResult.Next it
	// is (the listing in id order); Offset skips results after it.
	Cursor string
	Offset int
	Limit  int // 0: the server's default page size
}

func (q FindQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"type": q.Type, "capability": q.Capability, "vendor": q.Vendor,
		"publisher": q.Publisher, "group": q.Group, "q": q.Text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Online {
		v.Set("online", "true")
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Found is one Thing Find returned.
type Found struct {
	// TD is the parsed TD.
	TD *lmosproto.TD
	// Raw is the signed TD as served.
	Raw json.RawMessage
	// Publisher is the signer of the TD, verified by the client; empty
	// when the proof does not verify (VerifyErr says why).
	Publisher peer.ID
	VerifyErr error
	// Online is whether the node counts the Thing's publisher as online
	// (the listing's LMOS-Online header); false if the node does not say.
	Online bool
	// Trust is the publisher's mark in the node's trust list (the
	// listing's LMOS-Trust header): by its own entry or its verified
	// organisation's; "" if the node does not say.
	Trust string
	// Organization is the state of the TD's organisation claim
	// (lmos:organization) as the node checked it (the listing's
	// LMOS-Organization header): none, verified, pending or unverified;
	// "" if the node does not say.
	Organization string
}

// FindResult is a page of Find.
type FindResult struct {
	Things []Found
	// More is set when the directory has more results after this page.
	More bool
	// Next is the cursor of the next page (FindQuery.Cursor), from the
	// rel="next" link; empty when that link pages by offset (an order
	// other than by id, or an older node) or there is none.
	Next string
}

// Find searches the node's directory (GET /things). Each result's proof is
// verified here, so Publisher is who signed it, whatever the node says.
func (c *Client) Find(ctx context.Context, q FindQuery) (FindResult, error) {
	path := listingPath
	if v := q.values(); len(v) > 0 {
		path += "?" + v.Encode()
	}
	var raws []json.RawMessage
	a, err := c.do(ctx, request{method: http.MethodGet, path: path, out: &raws, max: maxTDPage})
	if err != nil {
		return FindResult{}, err
	}
	var res FindResult
	res.Next, res.More = nextCursor(a.header.Values("Link"))
	online := strings.Split(a.header.Get(tdd.HeaderOnline), ",")
	if len(online) != len(raws) {
		online = nil
	}
	marks, orgs := perTD(a.header, tdd.HeaderTrust, len(raws)), perTD(a.header, tdd.HeaderOrganization, len(raws))
	for i, raw := range raws {
		td, err := lmosproto.ParseTD(raw)
		if err != nil {
			return res, fmt.Errorf("GET %s: TD %d: %w", path, i, err)
		}
		f := Found{TD: td, Raw: raw}
		if online != nil {
			f.Online = strings.TrimSpace(online[i]) == "true"
		}
		if marks != nil {
			f.Trust = marks[i]
		}
		if orgs != nil {
			f.Organization = orgs[i]
		}
		if s, err := lmosproto.VerifyDocument(raw); err != nil {
			f.VerifyErr = err
		} else {
			f.Publisher = s.PeerID
		}
		res.Things = append(res.Things, f)
	}
	return res, nil
}

// perTD splits a listing header that gives one value per TD; nil when it
// is absent or does not have n values.
func perTD(h http.Header, name string, n int) []string {
	v := h.Get(name)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != n {
		return nil
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// nextCursor finds the rel="next" link among links (Link header values)
// and returns its cursor parameter ("" if it pages by offset).
func nextCursor(links []string) (cursor string, found bool) {
	for _, h := range links {
		for l := range strings.SplitSeq(h, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(l), ";")
			if !ok || !strings.Contains(params, `rel="next"`) {
				continue
			}
			if u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>")); err == nil {
				cursor = u.Query().Get("cursor")
			}
			return cursor, true
		}
	}
	return "", false
}
