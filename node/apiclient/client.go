package apiclient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Bounds of what the client reads of an answer.
const (
	// maxAnswer bounds an answer's body: a group with the largest log,
	// the trust list, an import.
	maxAnswer = 8 << 20
	// maxTDPage bounds an answer of TDs: a page of the listing, the
	// node's own Things.
	maxTDPage = 256 << 20
	// maxEvent bounds one event of a stream (a post to a group).
	maxEvent = 1 << 20
)

// accept is what the client takes: JSON (the listing of /things may come
// as JSON-LD), or the problem of a failure.
var accept = lmosproto.ContentTypeJSON + ", " + tdd.ContentTypeLDJSON + ", " + lmosproto.ContentTypeProblemJSON

// Client calls the local API of a running node. An answer that is not a
// success is returned as a *proto.Problem. A Client is safe for
// concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client of the API at baseURL ("http://127.0.0.1:5080", as
// the node's api file records it); hc carries the API token
// (httpapi.BearerClient), nil means http.DefaultClient.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), hc: hc}
}

// request is one call of the API.
type request struct {
	method string
	// path is below the base URL, with its query.
	path string
	// body is sent as the JSON body: a json.RawMessage as it is, anything
	// else encoded; nil sends none.
	body any
	// out receives a success's JSON answer; nil drops it, and an empty
	// answer (204) leaves it as it is.
	out any
	// max bounds the answer's body; 0 is maxAnswer.
	max int64
	// nameURL puts method and URL before every error, not only before
	// the client's own.
	nameURL bool
}

// where names r in errors.
func (c *Client) where(r request) string {
	if r.nameURL {
		return r.method + " " + c.base + r.path
	}
	return r.method + " " + r.path
}

// answer is what a success carries besides its body.
type answer struct {
	status int
	header http.Header
}

// do sends r and decodes a success's answer into r.out; any other answer
// is returned as its problem.
func (c *Client) do(ctx context.Context, r request) (answer, error) {
	resp, err := c.send(ctx, r, accept)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, cmp.Or(r.max, maxAnswer)))
	if err != nil {
		return answer{}, fmt.Errorf("%s: read answer: %w", c.where(r), err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if r.out == nil || len(bytes.TrimSpace(data)) == 0 {
		return a, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !isJSON(ct) {
		return a, fmt.Errorf("%s: content type %q, want %s", c.where(r), ct, lmosproto.ContentTypeJSON)
	}
	if err := json.Unmarshal(data, r.out); err != nil {
		return a, fmt.Errorf("%s: decode %s body: %w", c.where(r), ct, err)
	}
	return a, nil
}

// send sends r asking for the media types accept and returns the
// response of a success (status below 300), whose body the caller
// closes; any other answer is read, closed and returned as its problem.
func (c *Client) send(ctx context.Context, r request, accept string) (*http.Response, error) {
	var rd io.Reader
	if r.body != nil {
		b, ok := r.body.(json.RawMessage)
		if !ok {
			var err error
			if b, err = json.Marshal(r.body); err != nil {
				return nil, fmt.Errorf("%s: %w", c.where(r), err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.where(r), err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", lmosproto.ContentTypeJSON)
	}
	req.Header.Set("Accept", accept)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.named(r, err) // a *url.Error names method and URL
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("%s: %s, read problem: %w", c.where(r), resp.Status, err)
	}
	p, err := httpapi.ResponseProblem(resp, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.where(r), err)
	}
	return nil, c.named(r, p)
}

// named is err of r, with method and URL before it if r asks for them.
func (c *Client) named(r request, err error) error {
	if r.nameURL {
		return fmt.Errorf("%s: %w", c.where(r), err)
	}
	return err
}

// isJSON reports whether the media type mt is JSON: application/json or
// a +json type (JSON-LD, a TD).
func isJSON(mt string) bool {
	return mt == lmosproto.ContentTypeJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// call does r and returns its answer decoded as a T.
func call[T any](ctx context.Context, c *Client, r request) (T, error) {
	var v T
	r.out = &v
	_, err := c.do(ctx, r)
	return v, err
}
