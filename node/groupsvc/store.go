package groupsvc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"

	"github.com/lmosnode/lmosnode/groups"
)

// Datastore layout: the log of group <id> under /groups/<id>/log (the
// groups.Log.Marshal form, the DHT value's), and the token of a pending
// join under /groups-pending/<invitation ID>.
const (
	DatastorePrefix = "/groups"
	pendingPrefix   = "/groups-pending"
)

func logKey(id string) ds.Key     { return ds.NewKey(DatastorePrefix + "/" + id + "/log") }
func pendingKey(id string) ds.Key { return ds.NewKey(pendingPrefix + "/" + id) }

// persist writes g's log; it is durable when persist returns.
func (s *Service) persist(g *group) error {
	ctx, cancel := context.WithTimeout(context.Background(), DHTTimeout)
	defer cancel()
	if err := s.p.Datastore.Put(ctx, logKey(g.id), g.log.Marshal()); err != nil {
		return fmt.Errorf("group %s: persist log: %w", g.id, err)
	}
	if err := s.p.Datastore.Sync(ctx, logKey(g.id)); err != nil {
		return fmt.Errorf("group %s: persist log: %w", g.id, err)
	}
	return nil
}

// load reads the persisted logs and pending joins. A log that does not
// check is kept in the datastore and skipped, with an error in the log.
func (s *Service) load(ctx context.Context) error {
	res, err := s.p.Datastore.Query(ctx, query.Query{Prefix: DatastorePrefix})
	if err != nil {
		return fmt.Errorf("load groups: %w", err)
	}
	entries, err := res.Rest()
	if err != nil {
		return fmt.Errorf("load groups: %w", err)
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Key, DatastorePrefix+"/")
		if !ok {
			continue
		}
		id, ok := strings.CutSuffix(rest, "/log")
		if !ok || strings.Contains(id, "/") {
			continue
		}
		l, err := s.p.Ops.ParseLog(id, e.Value)
		if errors.Is(err, groups.ErrRetiredKey) {
			// An operation of a key retired after this node took it in:
			// the log stays this node's history (docs/identity.md).
			l, err = groups.ParseLog(id, e.Value)
		}
		if err != nil {
			s.log.Error("persisted group log does not check; skipped", "group", id, "err", err)
			continue
		}
		g := &group{id: id, log: l, subs: map[*postSub]struct{}{}}
		g.refresh()
		s.groups[id] = g
	}
	res, err = s.p.Datastore.Query(ctx, query.Query{Prefix: pendingPrefix})
	if err != nil {
		return fmt.Errorf("load pending joins: %w", err)
	}
	entries, err = res.Rest()
	if err != nil {
		return fmt.Errorf("load pending joins: %w", err)
	}
	for _, e := range entries {
		token := string(e.Value)
		inv, err := groups.ParseInvitation(token, s.now())
		if err != nil {
			if errors.Is(err, groups.ErrExpired) {
				s.log.Info("pending join expired", "key", e.Key)
			} else {
				s.log.Error("persisted pending join does not check; dropped", "key", e.Key, "err", err)
			}
			if err := s.p.Datastore.Delete(ctx, ds.NewKey(e.Key)); err != nil {
				return fmt.Errorf("drop pending join %s: %w", e.Key, err)
			}
			continue
		}
		s.pending[inv.ID] = newPendingJoin(inv, token)
	}
	return nil
}
