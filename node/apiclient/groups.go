package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

// The group methods call the routes of package groupapi. A GROUP argument
// is a group ID or a name exactly one of the node's groups has (the node
// resolves it).

// groupsPath is the root of the group routes.
const groupsPath = "/api/v1/groups"

// groupPath is the API path of group, with more path elements.
func groupPath(group string, elems ...string) string {
	p := groupsPath + "/" + url.PathEscape(group)
	for _, e := range elems {
		p += "/" + url.PathEscape(e)
	}
	return p
}

// group sends a request answered with a GroupInfo.
func (c *Client) group(ctx context.Context, method, path string, body any) (groupapi.GroupInfo, error) {
	return call[groupapi.GroupInfo](ctx, c, request{method: method, path: path, body: body})
}

// Groups returns every group the node knows: those it belongs to, and
// those it left, was removed from or that were dissolved.
func (c *Client) Groups(ctx context.Context) ([]groupapi.GroupInfo, error) {
	return call[[]groupapi.GroupInfo](ctx, c, request{method: http.MethodGet, path: groupsPath})
}

// CreateGroup founds a group named name with policy (nil: the defaults),
// with the node as its admin.
func (c *Client) CreateGroup(ctx context.Context, name string, policy *groups.Policy) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodPost, groupsPath, groupapi.CreateRequest{Name: name, Policy: policy})
}

// Group returns the group with its log.
func (c *Client) Group(ctx context.Context, group string) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodGet, groupPath(group), nil)
}

// RenameGroup renames the group (the node must be an admin).
func (c *Client) RenameGroup(ctx context.Context, group, name string) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodPatch, groupPath(group), groupapi.PatchRequest{Name: &name})
}

// SetGroupPolicy replaces the group's policy (the node must be an admin).
func (c *Client) SetGroupPolicy(ctx context.Context, group string, policy groups.Policy) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodPatch, groupPath(group), groupapi.PatchRequest{Policy: &policy})
}

// Invite makes an invitation token to the group (the node must be an
// admin).
func (c *Client) Invite(ctx context.Context, group string, o groupsvc.InviteOptions) (groupapi.Invitation, error) {
	req := groupapi.InviteRequest{Role: o.Role, Things: o.Things}
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
	return call[groupapi.Invitation](ctx, c, request{method: http.MethodPost, path: groupPath(group, "invitations"), body: req})
}

// Invitations lists the group's invitations the node knows (issued by it,
// or used by an add of the log): outstanding ones, or with all every one
// with its status.
func (c *Client) Invitations(ctx context.Context, group string, all bool) ([]groupapi.InvitationInfo, error) {
	path := groupPath(group, "invitations")
	if all {
		path += "?all=true"
	}
	return call[[]groupapi.InvitationInfo](ctx, c, request{method: http.MethodGet, path: path})
}

// RevokeInvitation revokes the invitation with ID inv (the node must be an
// admin): an uninvite operation every node enforces.
func (c *Client) RevokeInvitation(ctx context.Context, group, inv string) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodDelete, groupPath(group, "invitations", inv), nil)
}

// Join hands the invitation token to the node, which asks an admin's node
// to add it. If none answered yet (202), the result is Pending (the node
// keeps trying until the token expires); else Info is the group joined.
func (c *Client) Join(ctx context.Context, token string) (groupapi.JoinResult, error) {
	var raw json.RawMessage
	a, err := c.do(ctx, request{method: http.MethodPost, path: groupsPath + "/join", body: groupapi.JoinRequest{Token: token}, out: &raw})
	if err != nil {
		return groupapi.JoinResult{}, err
	}
	var res groupapi.JoinResult
	if a.status == http.StatusAccepted {
		err = json.Unmarshal(raw, &res)
	} else {
		res.Info = new(groupapi.GroupInfo)
		if err = json.Unmarshal(raw, res.Info); err == nil {
			res.Group = res.Info.ID
		}
	}
	if err != nil {
		return groupapi.JoinResult{}, fmt.Errorf("POST %s/join: answer: %w", groupsPath, err)
	}
	return res, nil
}

// RemoveMember removes member p from the group (the node must be an
// admin).
func (c *Client) RemoveMember(ctx context.Context, group string, p peer.ID) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodDelete, groupPath(group, "members", p.String()), nil)
}

// SetAdmin makes member p an admin (grant) or a plain member (the node
// must be an admin).
func (c *Client) SetAdmin(ctx context.Context, group string, p peer.ID, grant bool) (groupapi.GroupInfo, error) {
	method := http.MethodPut
	if !grant {
		method = http.MethodDelete
	}
	return c.group(ctx, method, groupPath(group, "admins", p.String()), nil)
}

// LeaveGroup makes the node leave the group.
func (c *Client) LeaveGroup(ctx context.Context, group string) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodPost, groupPath(group, "leave"), nil)
}

// DissolveGroup ends the group for everyone (the node must be an admin).
func (c *Client) DissolveGroup(ctx context.Context, group string) (groupapi.GroupInfo, error) {
	return c.group(ctx, http.MethodDelete, groupPath(group), nil)
}

// Post posts body, any JSON (a JSON string for text), to the group's
// members; it is sent as it is.
func (c *Client) Post(ctx context.Context, group string, body json.RawMessage) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: groupPath(group, "messages"), body: body})
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
	r := request{method: http.MethodGet, path: groupPath(group, "messages")}
	resp, err := c.send(ctx, r, httpapi.ContentTypeEventStream)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %s, want 200 and the stream", c.where(r), resp.Status)
	}
	next, stop := iter.Pull2(httpapi.ReadEvents(resp.Body, maxEvent))
	return &Subscription{body: resp.Body, next: next, stop: stop}, nil
}

// Next waits for the next post. It returns io.EOF when the node ended the
// stream, and the read error (the context's, after Close, …) otherwise.
func (s *Subscription) Next() (groupapi.Post, error) {
	for {
		ev, err, ok := s.next()
		switch {
		case !ok:
			return groupapi.Post{}, io.EOF
		case err != nil:
			return groupapi.Post{}, err
		case ev.Type != "post" && ev.Type != "":
			continue
		}
		var p groupapi.Post
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
			return groupapi.Post{}, fmt.Errorf("post: %w", err)
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
