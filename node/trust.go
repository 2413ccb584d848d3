package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The operator's trust list (docs/api.md#trust): Config.Trust at start,
// changed live through /api/v1/trust (lmosnode trust add|rm|ls), each
// change written back to the "trust" member of config.json. A publisher
// put on the deny list loses the records it had here at once.

// TrustEntry is one publisher of the trust list.
type TrustEntry struct {
	// Publisher is the peer ID.
	Publisher string `json:"publisher"`
	// Short is its short form (proto.ShortPublisher), which the CLI shows
	// and takes back.
	Short string `json:"short"`
	// Level is allow, prefer or deny.
	Level string `json:"level"`
}

// TrustList is the body of GET /api/v1/trust and of the answers to its
// changes.
type TrustList struct {
	// Entries are the listed publishers: denied, preferred, allowed, each
	// by peer ID.
	Entries []TrustEntry `json:"entries"`
	// OnlyTrusted: only the records of listed, non-denied publishers are
	// taken (config.json's trust.onlyTrusted).
	OnlyTrusted bool `json:"onlyTrusted"`
	// Dropped is how many records of the publisher a deny removed from the
	// directory; only in the answer to that change.
	Dropped int `json:"dropped,omitempty"`
}

// TrustRequest is the body of PUT /api/v1/trust/{publisher}.
type TrustRequest struct {
	// Level is allow, prefer or deny.
	Level string `json:"level"`
}

// Trust returns the node's trust list.
func (n *Node) Trust() *trust.List { return n.trust }

// trustList is the wire form of the node's list.
func (n *Node) trustList() TrustList {
	c := n.trust.Config()
	out := TrustList{Entries: []TrustEntry{}, OnlyTrusted: c.OnlyTrusted}
	for _, l := range []struct {
		level trust.Level
		ids   []string
	}{{trust.Deny, c.Deny}, {trust.Prefer, c.Prefer}, {trust.Allow, c.Allow}} {
		for _, s := range l.ids {
			id, err := peer.Decode(s)
			if err != nil {
				continue // Config holds peer IDs only
			}
			out.Entries = append(out.Entries, TrustEntry{Publisher: s, Short: lmosproto.ShortPublisher(id), Level: string(l.level)})
		}
	}
	return out
}

func (n *Node) handleTrustList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.trustList())
}

// handleTrustSet serves PUT /api/v1/trust/{publisher}: the publisher (a
// peer ID, did:key or a short form of a publisher the directory holds)
// goes to the level of the body.
func (n *Node) handleTrustSet(w http.ResponseWriter, r *http.Request) {
	p, err := n.dir.ParsePublisher(r.PathValue("publisher"))
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("publisher: %v", err))
		return
	}
	var req TrustRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("body: want {\"level\": \"allow\"|\"prefer\"|\"deny\"}: %v", err))
		return
	}
	level, err := trust.ParseLevel(req.Level)
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if p == n.peerID && level == trust.Deny {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("publisher %s is this node: it cannot be denied", p))
		return
	}
	n.trustMu.Lock()
	defer n.trustMu.Unlock()
	prev := n.trust.Level(p)
	if err := n.trust.Set(p, level); err != nil {
		writeProblem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := n.saveTrust(); err != nil {
		n.restoreTrust(p, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	out := n.trustList()
	if level == trust.Deny {
		dropped, err := n.dir.DropPublisher(p)
		if err != nil {
			writeProblem(w, r, http.StatusInternalServerError, err.Error())
			return
		}
		out.Dropped = dropped
	}
	n.log.Info("trust list changed", "publisher", p, "level", level, "dropped", out.Dropped)
	writeJSON(w, http.StatusOK, out)
}

// handleTrustRemove serves DELETE /api/v1/trust/{publisher}.
func (n *Node) handleTrustRemove(w http.ResponseWriter, r *http.Request) {
	p, err := n.trustListed(r.PathValue("publisher"))
	if err != nil {
		writeProblem(w, r, http.StatusNotFound, fmt.Sprintf("publisher: %v", err))
		return
	}
	n.trustMu.Lock()
	defer n.trustMu.Unlock()
	prev := n.trust.Level(p)
	if !n.trust.Remove(p) {
		writeProblem(w, r, http.StatusNotFound, fmt.Sprintf("publisher %s is not on the trust list", p))
		return
	}
	if err := n.saveTrust(); err != nil {
		n.restoreTrust(p, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	n.log.Info("trust list changed", "publisher", p, "level", "none")
	writeJSON(w, http.StatusOK, n.trustList())
}

// trustListed returns the listed publisher s names: a peer ID, a did:key,
// or a short form that ends exactly one listed publisher (a denied one is
// no longer in the directory).
func (n *Node) trustListed(s string) (peer.ID, error) {
	if id, err := lmosproto.ParsePublisher(s); err == nil {
		return id, nil
	}
	suffix, ok := lmosproto.PublisherSuffix(s)
	if !ok {
		return "", fmt.Errorf("%q is neither a peer ID, a did:key nor a short form", s)
	}
	var found []string
	for _, e := range n.trustList().Entries {
		if strings.HasSuffix(e.Publisher, suffix) {
			found = append(found, e.Publisher)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%q ends %d listed publishers (%s), want one", s, len(found), strings.Join(found, ", "))
	}
	return peer.Decode(found[0])
}

// restoreTrust puts p back at level prev ("" for unlisted) after a failed
// write.
func (n *Node) restoreTrust(p peer.ID, prev trust.Level) {
	if prev == "" {
		n.trust.Remove(p)
		return
	}
	_ = n.trust.Set(p, prev)
}

// saveTrust writes the list to the "trust" member of config.json, leaving
// every other member as written (members are re-ordered by name).
func (n *Node) saveTrust() error {
	path := filepath.Join(n.cfg.Home, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	c := n.trust.Config()
	if c.Allow == nil && c.Prefer == nil && c.Deny == nil && !c.OnlyTrusted {
		delete(doc, "trust")
	} else {
		raw, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("trust: %w", err)
		}
		doc["trust"] = raw
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	if err := atomicfile.Write(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("trust: config %s: %w", path, err)
	}
	return nil
}

// FetchTrust asks the API at apiURL for its trust list.
func FetchTrust(ctx context.Context, client *http.Client, apiURL string) (TrustList, error) {
	var l TrustList
	err := callJSON(ctx, client, http.MethodGet, strings.TrimSuffix(apiURL, "/")+"/api/v1/trust", nil, &l)
	return l, err
}

// SetTrust puts publisher (a peer ID, did:key or short form) at level in
// the trust list of the API at apiURL and returns the list.
func SetTrust(ctx context.Context, client *http.Client, apiURL, publisher string, level trust.Level) (TrustList, error) {
	var l TrustList
	err := callJSON(ctx, client, http.MethodPut, trustURL(apiURL, publisher), TrustRequest{Level: string(level)}, &l)
	return l, err
}

// RemoveTrust takes publisher off the trust list of the API at apiURL and
// returns the list.
func RemoveTrust(ctx context.Context, client *http.Client, apiURL, publisher string) (TrustList, error) {
	var l TrustList
	err := callJSON(ctx, client, http.MethodDelete, trustURL(apiURL, publisher), nil, &l)
	return l, err
}

func trustURL(apiURL, publisher string) string {
	return strings.TrimSuffix(apiURL, "/") + "/api/v1/trust/" + url.PathEscape(publisher)
}

// Marks returns the mark of each publisher in the list l, for a client
// that shows results: trusted for allowed and preferred ones, denied for
// denied ones; publishers not in it are unknown (or own, which the client
// knows).
func (l TrustList) Marks() map[string]trust.Mark {
	m := make(map[string]trust.Mark, len(l.Entries))
	for _, e := range l.Entries {
		switch trust.Level(e.Level) {
		case trust.Allow, trust.Prefer:
			m[e.Publisher] = trust.Trusted
		case trust.Deny:
			m[e.Publisher] = trust.Denied
		}
	}
	return m
}
