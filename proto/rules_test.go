package proto_test

import (
	"testing"

	"github.com/lmosnode/lmosnode/proto"
)

// rule is what the message rules say about one message type.
type rule struct {
	fromThing, followsAction, subscribes, endsSubscription, named, expectsReply bool
	cancelledBy, replyType                                                      proto.MessageType
}

// rules is the expected answer of every rule for every message type.
var rules = map[proto.MessageType]rule{
	proto.MsgInvokeAction:            {named: true, expectsReply: true, cancelledBy: proto.MsgCancelAction, replyType: proto.MsgActionStatus},
	proto.MsgQueryAction:             {followsAction: true, named: true, expectsReply: true, replyType: proto.MsgActionStatus},
	proto.MsgCancelAction:            {followsAction: true, named: true, expectsReply: true, replyType: proto.MsgActionStatus},
	proto.MsgStreamInput:             {followsAction: true, named: true},
	proto.MsgStreamEnd:               {followsAction: true, named: true},
	proto.MsgActionStatus:            {fromThing: true, named: true, expectsReply: true},
	proto.MsgSubscribeEvent:          {subscribes: true, named: true, expectsReply: true, cancelledBy: proto.MsgUnsubscribeEvent, replyType: proto.MsgEvent},
	proto.MsgSubscribeAllEvents:      {subscribes: true, expectsReply: true, cancelledBy: proto.MsgUnsubscribeAllEvents, replyType: proto.MsgEvent},
	proto.MsgObserveProperty:         {subscribes: true, named: true, expectsReply: true, cancelledBy: proto.MsgUnobserveProperty, replyType: proto.MsgPropertyReading},
	proto.MsgUnsubscribeEvent:        {endsSubscription: true, named: true},
	proto.MsgUnsubscribeAllEvents:    {endsSubscription: true},
	proto.MsgUnobserveProperty:       {endsSubscription: true, named: true},
	proto.MsgEvent:                   {fromThing: true, named: true, expectsReply: true},
	proto.MsgReadProperty:            {named: true, expectsReply: true, replyType: proto.MsgPropertyReading},
	proto.MsgWriteProperty:           {named: true, expectsReply: true, replyType: proto.MsgPropertyReading},
	proto.MsgWriteMultipleProperties: {expectsReply: true, replyType: proto.MsgPropertyReadings},
	proto.MsgPropertyReading:         {fromThing: true, named: true, expectsReply: true},
	proto.MsgPropertyReadings:        {fromThing: true, expectsReply: true},
	proto.MsgError:                   {fromThing: true, named: true, expectsReply: true},
}

func TestMessageTypeRules(t *testing.T) {
	if len(rules) != len(proto.KnownTypes) {
		t.Errorf("the table has %d message types, proto knows %d", len(rules), len(proto.KnownTypes))
	}
	for _, typ := range proto.KnownTypes {
		want, ok := rules[typ]
		if !ok {
			t.Errorf("%s: not in the table", typ)
			continue
		}
		got := rule{
			fromThing:        typ.FromThing(),
			followsAction:    typ.FollowsAction(),
			subscribes:       typ.Subscribes(),
			endsSubscription: typ.EndsSubscription(),
			named:            typ.Named(),
			expectsReply:     (&proto.Message{Type: typ}).ExpectsReply(),
			cancelledBy:      typ.CancelledBy(),
			replyType:        typ.ReplyType(),
		}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", typ, got, want)
		}
		if typ.FollowUp() != (want.followsAction || want.endsSubscription) {
			t.Errorf("%s: FollowUp() = %v", typ, typ.FollowUp())
		}
		if (&proto.Message{Type: typ, OneWay: true}).ExpectsReply() {
			t.Errorf("%s: a one-way message expects a reply", typ)
		}
	}
	for _, typ := range []proto.MessageType{"", "bogus"} {
		if typ.FromThing() || typ.FollowUp() || typ.Subscribes() || typ.CancelledBy() != "" || typ.ReplyType() != "" {
			t.Errorf("unknown type %q has a rule", typ)
		}
	}
}

func TestUnsubscribes(t *testing.T) {
	want := map[[2]proto.MessageType]bool{
		{proto.MsgUnsubscribeEvent, proto.MsgSubscribeEvent}:         true,
		{proto.MsgUnsubscribeAllEvents, proto.MsgSubscribeAllEvents}: true,
		{proto.MsgUnsubscribeAllEvents, proto.MsgSubscribeEvent}:     true,
		{proto.MsgUnobserveProperty, proto.MsgObserveProperty}:       true,
	}
	for _, typ := range proto.KnownTypes {
		for _, sub := range proto.KnownTypes {
			if got := typ.Unsubscribes(sub); got != want[[2]proto.MessageType{typ, sub}] {
				t.Errorf("%s.Unsubscribes(%s) = %v", typ, sub, got)
			}
		}
		// A subscription's own counterpart ends it.
		if typ.Subscribes() && !typ.CancelledBy().Unsubscribes(typ) {
			t.Errorf("%s is not ended by its CancelledBy %s", typ, typ.CancelledBy())
		}
	}
}

func TestEnds(t *testing.T) {
	status := func(s string) *proto.Message { return &proto.Message{Type: proto.MsgActionStatus, Status: s} }
	msg := func(typ proto.MessageType) *proto.Message { return &proto.Message{Type: typ} }
	errMsg := &proto.Message{Type: proto.MsgError, Status: "500"}
	for _, tc := range []struct {
		req   proto.MessageType
		reply *proto.Message
		want  bool
	}{
		{proto.MsgInvokeAction, status(proto.ActionPending), false},
		{proto.MsgInvokeAction, status(proto.ActionRunning), false},
		{proto.MsgInvokeAction, status(proto.ActionCompleted), true},
		{proto.MsgInvokeAction, status(proto.ActionFailed), true},
		{proto.MsgInvokeAction, status(proto.ActionCancelled), true},
		{proto.MsgInvokeAction, errMsg, true},
		{proto.MsgQueryAction, status(proto.ActionRunning), true},
		{proto.MsgCancelAction, status(proto.ActionPending), true},
		{proto.MsgReadProperty, msg(proto.MsgPropertyReading), true},
		{proto.MsgReadProperty, msg(proto.MsgPropertyReadings), false},
		{proto.MsgWriteProperty, msg(proto.MsgPropertyReading), true},
		{proto.MsgWriteMultipleProperties, msg(proto.MsgPropertyReading), false},
		{proto.MsgWriteMultipleProperties, msg(proto.MsgPropertyReadings), true},
		{proto.MsgObserveProperty, msg(proto.MsgPropertyReading), false},
		{proto.MsgObserveProperty, errMsg, true},
		{proto.MsgSubscribeEvent, msg(proto.MsgEvent), false},
		{proto.MsgSubscribeAllEvents, msg(proto.MsgEvent), false},
		{proto.MsgSubscribeAllEvents, errMsg, true},
		{proto.MsgUnsubscribeEvent, msg(proto.MsgEvent), true},
		{proto.MsgStreamInput, status(proto.ActionRunning), true},
	} {
		if got := tc.reply.Ends(&proto.Message{Type: tc.req}); got != tc.want {
			t.Errorf("%s %s ends %s: %v, want %v", tc.reply.Type, tc.reply.Status, tc.req, got, tc.want)
		}
	}
}
