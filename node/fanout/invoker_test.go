package fanout

import (
	"context"
	"errors"
	"testing"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// A subscription served from a topic refuses what a subscription served by
// the owner refuses: every message but an unsubscribe that ends it
// (net_test ends one with unsubscribeEvent).
func TestSessionSendRefuses(t *testing.T) {
	for _, tc := range []struct{ req, m lmosproto.MessageType }{
		{lmosproto.MsgSubscribeAllEvents, lmosproto.MsgUnsubscribeEvent},
		{lmosproto.MsgSubscribeEvent, lmosproto.MsgUnobserveProperty},
		{lmosproto.MsgSubscribeEvent, lmosproto.MsgCancelAction},
		{lmosproto.MsgSubscribeAllEvents, lmosproto.MsgStreamInput},
	} {
		s := &session{req: lmosproto.NewMessage("urn:example:sensor", tc.req)}
		if err := s.Send(context.Background(), &lmosproto.Message{Type: tc.m}); !errors.Is(err, interact.ErrNotInSession) {
			t.Errorf("%s in a %s session: %v, want ErrNotInSession", tc.m, tc.req, err)
		}
	}
}
