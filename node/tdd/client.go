package tdd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// maxResponse bounds a response body the client reads: a page of TDs.
const maxResponse = 256 << 20

// Client calls the API of a running node. An error response is returned
// as a *proto.Problem. A Client is safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the API at baseURL ("http://127.0.0.1:5080",
// as the node's api file records it); hc nil means http.DefaultClient.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), hc: hc}
}

// Publish publishes td (a TD document) as one of the node's own Things.
// backend nil keeps the backend URL stored for the Thing, "" clears it.
func (c *Client) Publish(ctx context.Context, td []byte, backend *string) (PublishResult, error) {
	body, err := json.Marshal(PublishRequest{TD: td, Backend: backend})
	if err != nil {
		return PublishResult{}, fmt.Errorf("publish: td: %w", err)
	}
	var res PublishResult
	_, err = c.do(ctx, http.MethodPost, "/api/v1/things", ContentTypeJSON, body, &res)
	return res, err
}

// Own returns the node's own Things.
func (c *Client) Own(ctx context.Context) ([]ThingInfo, error) {
	var out []ThingInfo
	_, err := c.do(ctx, http.MethodGet, "/api/v1/things", "", nil, &out)
	return out, err
}

// Remove removes the node's own Thing id.
func (c *Client) Remove(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/things/"+url.PathEscape(id), "", nil, nil)
	return err
}

// Peers returns the peers the node knows.
func (c *Client) Peers(ctx context.Context) ([]Peer, error) {
	var out []Peer
	_, err := c.do(ctx, http.MethodGet, "/api/v1/peers", "", nil, &out)
	return out, err
}

// Connect asks the node to connect to the peer at addr, a multiaddr ending
// in /p2p/<peer ID>.
func (c *Client) Connect(ctx context.Context, addr string) (Peer, error) {
	body, err := json.Marshal(ConnectRequest{Addr: addr})
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	_, err = c.do(ctx, http.MethodPost, "/api/v1/connect", ContentTypeJSON, body, &p)
	return p, err
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
}

// FindResult is a page of Find.
type FindResult struct {
	Things []Found
	// More is set when the directory has more results after this page.
	More bool
}

// Find searches the node's directory (GET /things). Each result's proof is
// verified here, so Publisher is who signed it, whatever the node says.
func (c *Client) Find(ctx context.Context, q FindQuery) (FindResult, error) {
	path := "/things"
	if v := q.values(); len(v) > 0 {
		path += "?" + v.Encode()
	}
	var raws []json.RawMessage
	hdr, err := c.do(ctx, http.MethodGet, path, "", nil, &raws)
	if err != nil {
		return FindResult{}, err
	}
	res := FindResult{More: strings.Contains(hdr.Get("Link"), `rel="next"`)}
	online := strings.Split(hdr.Get(HeaderOnline), ",")
	if len(online) != len(raws) {
		online = nil
	}
	for i, raw := range raws {
		td, err := lmosproto.ParseTD(raw)
		if err != nil {
			return res, fmt.Errorf("GET %s: TD %d: %w", path, i, err)
		}
		f := Found{TD: td, Raw: raw}
		if online != nil {
			f.Online = strings.TrimSpace(online[i]) == "true"
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

// do sends a request and decodes a JSON response into out (if not nil), or
// an error response into a *proto.Problem.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", ContentTypeJSON+", "+ContentTypeLDJSON+", "+ContentTypeProblem)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // *url.Error names method and URL
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		p, err := httpapi.ResponseProblem(resp, data)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		return resp.Header, p
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("%s %s: decode %s body: %w", method, path, ct, err)
	}
	return resp.Header, nil
}
