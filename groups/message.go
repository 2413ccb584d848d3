package groups

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// Topic returns the gossipsub topic of a group.
func Topic(groupID string) string { return proto.TopicGroupPrefix + groupID }

// Key returns the DHT record key of a group's log.
func Key(groupID string) string { return "/" + proto.NamespaceGroup + "/" + groupID }

// ParseKey returns the group ID of a DHT record key "/lmos-group/<id>".
func ParseKey(key string) (string, error) {
	id, ok := strings.CutPrefix(key, "/"+proto.NamespaceGroup+"/")
	if !ok || !isOpID(id) {
		return "", fmt.Errorf("%w: %q", ErrBadKey, shorten(key))
	}
	return id, nil
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Message is a message on a group topic: exactly one member is set.
type Message struct {
	// Op is a signed operation.
	Op json.RawMessage `json:"op,omitempty"`
	// Post is a member's message.
	Post *Post `json:"post,omitempty"`
	// Thing is a signed TD or tombstone record scoped to the group.
	Thing json.RawMessage `json:"thing,omitempty"`
}

// Post is a member's message to the group.
type Post struct {
	Body json.RawMessage `json:"body"`
	Sent time.Time       `json:"sent"`
}

// ParseMessage reads a group topic message: a JSON object with exactly one
// member (op, post or thing), each within its size limit. It checks the
// form only; the caller checks the op (ParseOp, Log.Add), the post's author
// (State.CanPost) and the thing (proto.ParseRecord).
func ParseMessage(data []byte) (*Message, error) {
	if len(data) > MaxMessageSize {
		return nil, fmt.Errorf("%w: %w: %d bytes, the limit is %d", ErrBadMessage, ErrTooLarge, len(data), MaxMessageSize)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if len(members) != 1 {
		return nil, fmt.Errorf("%w: %d members, want exactly one of op, post, thing", ErrBadMessage, len(members))
	}
	m := &Message{}
	for name, v := range members {
		isObject := len(v) > 0 && v[0] == '{'
		switch name {
		case "op":
			if len(v) > MaxOpSize {
				return nil, fmt.Errorf("%w: %w: /op of %d bytes", ErrBadMessage, ErrTooLarge, len(v))
			}
			if !isObject {
				return nil, fmt.Errorf("%w: /op: want an object", ErrBadMessage)
			}
			m.Op = v
		case "thing":
			if len(v) > proto.MaxRecordSize {
				return nil, fmt.Errorf("%w: %w: /thing of %d bytes", ErrBadMessage, ErrTooLarge, len(v))
			}
			if !isObject {
				return nil, fmt.Errorf("%w: /thing: want an object", ErrBadMessage)
			}
			m.Thing = v
		case "post":
			p, err := parsePost(v)
			if err != nil {
				return nil, err
			}
			m.Post = p
		default:
			return nil, fmt.Errorf("%w: /%s: unknown member, want op, post or thing", ErrBadMessage, shorten(name))
		}
	}
	return m, nil
}

func parsePost(v json.RawMessage) (*Post, error) {
	var pm map[string]json.RawMessage
	if err := json.Unmarshal(v, &pm); err != nil {
		return nil, fmt.Errorf("%w: /post: %w", ErrBadMessage, err)
	}
	if err := checkMembers(pm, []string{"body!", "sent!"}); err != nil {
		return nil, fmt.Errorf("%w: /post%w", ErrBadMessage, err)
	}
	body := bytes.TrimSpace(pm["body"])
	if len(body) > MaxPostSize {
		return nil, fmt.Errorf("%w: %w: /post/body of %d bytes, the limit is %d", ErrBadMessage, ErrTooLarge, len(body), MaxPostSize)
	}
	var p Post
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, fmt.Errorf("%w: /post: %w", ErrBadMessage, err)
	}
	if p.Sent.IsZero() {
		return nil, fmt.Errorf("%w: /post/sent: zero time", ErrBadMessage)
	}
	p.Body = body
	return &p, nil
}
