package groupapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const (
	// groupsPath is the root of the group routes.
	groupsPath = "/api/v1/groups"
	// maxResponse bounds an answer the client reads: a GroupInfo with the
	// largest log.
	maxResponse = 8 << 20
	// maxEvent bounds one line of the message stream.
	maxEvent = 1 << 20
)

// Client calls the group routes of a running node. An answer that is not
// a success is returned as a *lmosproto.Problem. GROUP arguments are a group ID
// or a name exactly one of the node's groups has (the node resolves it). A
// Client is safe for concurrent use.
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

// List returns every group the node knows: those it belongs to, and those
// it left, was removed from or that were dissolved.
func (c *Client) List(ctx context.Context) ([]GroupInfo, error) {
	var out []GroupInfo
	_, err := c.do(ctx, http.MethodGet, groupsPath, nil, &out)
	return out, err
}

// Create founds a group named name with policy (nil: the defaults), with
// the node as its admin.
func (c *Client) Create(ctx context.Context, name string, policy *groups.Policy) (GroupInfo, error) {
	return c.info(ctx, http.MethodPost, groupsPath, CreateRequest{Name: name, Policy: policy})
}

// Show returns the group with its log.
func (c *Client) Show(ctx context.Context, group string) (GroupInfo, error) {
	return c.info(ctx, http.MethodGet, groupPath(group), nil)
}

// Rename renames the group (the node must be an admin).
func (c *Client) Rename(ctx context.Context, group, name string) (GroupInfo, error) {
	return c.info(ctx, http.MethodPatch, groupPath(group), PatchRequest{Name: &name})
}

// SetPolicy replaces the group's policy (the node must be an admin).
func (c *Client) SetPolicy(ctx context.Context, group string, policy groups.Policy) (GroupInfo, error) {
	return c.info(ctx, http.MethodPatch, groupPath(group), PatchRequest{Policy: &policy})
}

// Invite makes an invitation token to the group (the node must be an
// admin).
func (c *Client) Invite(ctx context.Context, group string, o groupsvc.InviteOptions) (Invitation, error) {
	req := InviteRequest{Role: o.Role, Things: o.Things}
	switch {
	case o.Uses == groupsvc.UnlimitedUses:
		req.Uses = new(int)
	case o.Uses != 0: // a negative one is the node's to refuse
		req.Uses = &o.Uses
	}
	if o.For != "" {
		req.For = o.For.String()
	}
	if o.TTL != 0 {
		req.TTL = o.TTL.String()
	}
	var inv Invitation
	_, err := c.do(ctx, http.MethodPost, groupPath(group, "invitations"), req, &inv)
	return inv, err
}

// Invitations lists the group's invitations the node knows (issued by it,
// or used by an add of the log): outstanding ones, or with all every one
// with its status.
func (c *Client) Invitations(ctx context.Context, group string, all bool) ([]InvitationInfo, error) {
	path := groupPath(group, "invitations")
	if all {
		path += "?all=true"
	}
	var out []InvitationInfo
	_, err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// RevokeInvitation revokes the invitation with ID inv (the node must be an
// admin): an uninvite operation every node enforces.
func (c *Client) RevokeInvitation(ctx context.Context, group, inv string) (GroupInfo, error) {
	return c.info(ctx, http.MethodDelete, groupPath(group, "invitations", inv), nil)
}

// Join hands the invitation token to the node, which asks an admin's node
// to add it. If none answered yet, the result is Pending (the node keeps
// trying until the token expires); else Info is the group joined.
func (c *Client) Join(ctx context.Context, token string) (JoinResult, error) {
	var raw json.RawMessage
	status, err := c.do(ctx, http.MethodPost, groupsPath+"/join", JoinRequest{Token: token}, &raw)
	if err != nil {
		return JoinResult{}, err
	}
	var res JoinResult
	if status == http.StatusAccepted {
		err = json.Unmarshal(raw, &res)
	} else {
		res.Info = new(GroupInfo)
		if err = json.Unmarshal(raw, res.Info); err == nil {
			res.Group = res.Info.ID
		}
	}
	if err != nil {
		return JoinResult{}, fmt.Errorf("POST %s/join: answer: %w", groupsPath, err)
	}
	return res, nil
}

// Remove removes member p from the group (the node must be an admin).
func (c *Client) Remove(ctx context.Context, group string, p peer.ID) (GroupInfo, error) {
	return c.info(ctx, http.MethodDelete, groupPath(group, "members", p.String()), nil)
}

// SetAdmin makes member p an admin (grant) or a plain member (the node
// must be an admin).
func (c *Client) SetAdmin(ctx context.Context, group string, p peer.ID, grant bool) (GroupInfo, error) {
	method := http.MethodPut
	if !grant {
		method = http.MethodDelete
	}
	return c.info(ctx, method, groupPath(group, "admins", p.String()), nil)
}

// Leave makes the node leave the group.
func (c *Client) Leave(ctx context.Context, group string) (GroupInfo, error) {
	return c.info(ctx, http.MethodPost, groupPath(group, "leave"), nil)
}

// Dissolve ends the group for everyone (the node must be an admin).
func (c *Client) Dissolve(ctx context.Context, group string) (GroupInfo, error) {
	return c.info(ctx, http.MethodDelete, groupPath(group), nil)
}

// Post posts body, any JSON (a JSON string for text), to the group's
// members.
func (c *Client) Post(ctx context.Context, group string, body json.RawMessage) error {
	_, err := c.do(ctx, http.MethodPost, groupPath(group, "messages"), body, nil)
	return err
}

// Subscription is an open stream of a group's posts; see Subscribe.
type Subscription struct {
	body io.ReadCloser
	next func() (httpapi.Event, error, bool)
	stop func()
}

// Subscribe opens the stream of the posts to the group from now on. The
// stream ends when ctx ends, Close is called, or the node ends it.
func (c *Client) Subscribe(ctx context.Context, group string) (*Subscription, error) {
	path := groupPath(group, "messages")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Accept", httpapi.ContentTypeEventStream)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // *url.Error names method and URL
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxEvent))
		return nil, problemOf(resp, b)
	}
	next, stop := iter.Pull2(httpapi.ReadEvents(resp.Body, maxEvent))
	return &Subscription{body: resp.Body, next: next, stop: stop}, nil
}

// Next waits for the next post. It returns io.EOF when the node ended the
// stream, and the read error (the context's, after Close, …) otherwise.
func (s *Subscription) Next() (Post, error) {
	for {
		ev, err, ok := s.next()
		switch {
		case !ok:
			return Post{}, io.EOF
		case err != nil:
			return Post{}, err
		case ev.Type != "post" && ev.Type != "":
			continue
		}
		var p Post
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
			return Post{}, fmt.Errorf("post: %w", err)
		}
		return p, nil
	}
}

// Close ends the stream.
func (s *Subscription) Close() error {
	err := s.body.Close()
	s.stop()
	return err
}

// groupPath is the API path of group, with more path elements.
func groupPath(group string, elems ...string) string {
	p := groupsPath + "/" + url.PathEscape(group)
	for _, e := range elems {
		p += "/" + url.PathEscape(e)
	}
	return p
}

// info sends a request answered with a GroupInfo.
func (c *Client) info(ctx context.Context, method, path string, body any) (GroupInfo, error) {
	var g GroupInfo
	_, err := c.do(ctx, method, path, body, &g)
	return g, err
}

// do sends a request with body (JSON encoded, unless a json.RawMessage;
// none if nil) and decodes a success's JSON answer into out (if not nil);
// it returns the status, or the problem of any other answer.
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.(json.RawMessage)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return 0, fmt.Errorf("%s %s: %w", method, path, err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", lmosproto.ContentTypeJSON)
	}
	req.Header.Set("Accept", lmosproto.ContentTypeJSON)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err // *url.Error names method and URL
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, problemOf(resp, data)
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
