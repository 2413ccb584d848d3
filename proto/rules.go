package proto

// The rules of the message model that every transport and the engine
// apply: who sends a message type, which interaction a message opens,
// continues or ends, and which message is the last of an interaction.
// They are kept here once so that the transports adapt one message model
// instead of keeping their own lists (spec/lmos/10-communication_protocol.md,
// "LMOS Message Types" and "Interaction Patterns"; the WebSocket binding,
// spec/lmos/11-websocket_binding.md, carries the same messages unchanged).

// FromThing reports whether messages of type t go from a Thing to its
// consumer: actionStatus, event, propertyReading, propertyReadings and
// error (the "Thing ➡ Consumer" rows of the spec's message type table;
// propertyReadings and event, which the table lacks, are Thing replies in
// its examples). Every other known type goes from the consumer to the
// Thing.
func (t MessageType) FromThing() bool { return msgTypes[t].fromThing }

// FollowsAction reports whether a message of type t continues an action
// invocation that an invokeAction opened, which it names by that
// invocation's correlationID: queryAction and cancelAction (spec
// "queryAction", "cancelAction") and lmosnode's streamInput and streamEnd
// (see MessageType).
func (t MessageType) FollowsAction() bool {
	switch t {
	case MsgQueryAction, MsgCancelAction, MsgStreamInput, MsgStreamEnd:
		return true
	}
	return false
}

// Subscribes reports whether a message of type t opens a subscription: a
// request answered by any number of notifications until the consumer ends
// it (spec "One Request-Multiple Responses" and "Publish-Subscribe"):
// subscribeEvent, subscribeAllEvents and observeProperty.
func (t MessageType) Subscribes() bool {
	switch t {
	case MsgSubscribeEvent, MsgSubscribeAllEvents, MsgObserveProperty:
		return true
	}
	return false
}

// EndsSubscription reports whether a message of type t ends subscriptions
// the consumer opened: unsubscribeEvent, unsubscribeAllEvents and
// unobserveProperty (spec "Publish-Subscribe", "unobserveProperty").
// Unsubscribes tells which subscriptions.
func (t MessageType) EndsSubscription() bool {
	switch t {
	case MsgUnsubscribeEvent, MsgUnsubscribeAllEvents, MsgUnobserveProperty:
		return true
	}
	return false
}

// FollowUp reports whether a message of type t acts on an interaction that
// another request opened (FollowsAction or EndsSubscription) rather than
// opening one of its own.
func (t MessageType) FollowUp() bool { return t.FollowsAction() || t.EndsSubscription() }

// Unsubscribes reports whether a message of type t ends a subscription
// that a message of type sub opened: unsubscribeEvent ends a
// subscribeEvent, unobserveProperty an observeProperty, and
// unsubscribeAllEvents ("unsubscribe from all events") a subscribeAllEvents
// as well as a subscribeEvent. Whether the affordance names must match as
// well is up to the caller (see Named).
func (t MessageType) Unsubscribes(sub MessageType) bool {
	switch t {
	case MsgUnsubscribeEvent:
		return sub == MsgSubscribeEvent
	case MsgUnsubscribeAllEvents:
		return sub == MsgSubscribeAllEvents || sub == MsgSubscribeEvent
	case MsgUnobserveProperty:
		return sub == MsgObserveProperty
	}
	return false
}

// CancelledBy returns the consumer message type that ends early the
// interaction a message of type t opens: cancelAction for invokeAction,
// and for a subscription its own counterpart (unsubscribeEvent for
// subscribeEvent, unsubscribeAllEvents for subscribeAllEvents,
// unobserveProperty for observeProperty). It is "" for every other type.
func (t MessageType) CancelledBy() MessageType {
	switch t {
	case MsgInvokeAction:
		return MsgCancelAction
	case MsgSubscribeEvent:
		return MsgUnsubscribeEvent
	case MsgSubscribeAllEvents:
		return MsgUnsubscribeAllEvents
	case MsgObserveProperty:
		return MsgUnobserveProperty
	}
	return ""
}

// ReplyType returns the type of the Thing's answers, other than error, to
// a request of type t (spec "Interaction Patterns"): actionStatus for
// invokeAction, queryAction and cancelAction; propertyReading for
// readProperty, writeProperty and observeProperty; propertyReadings for
// writeMultipleProperties; event for subscribeEvent and subscribeAllEvents.
// It is "" for the messages that have no answer of their own (the
// unsubscribes, streamInput, streamEnd) and for the Thing's messages.
//
// The spec's text answers writeProperty with propertyReadings, its summary
// table with propertyReading; lmosnode follows the table (one property,
// one reading).
func (t MessageType) ReplyType() MessageType {
	switch t {
	case MsgInvokeAction, MsgQueryAction, MsgCancelAction:
		return MsgActionStatus
	case MsgReadProperty, MsgWriteProperty, MsgObserveProperty:
		return MsgPropertyReading
	case MsgWriteMultipleProperties:
		return MsgPropertyReadings
	case MsgSubscribeEvent, MsgSubscribeAllEvents:
		return MsgEvent
	}
	return ""
}

// Named reports whether a message of type t is about one affordance, named
// by its name member (NameMember). subscribeAllEvents,
// unsubscribeAllEvents, writeMultipleProperties and propertyReadings are
// about all events or several properties and name none. An error names
// the affordance of the request it answers.
func (t MessageType) Named() bool {
	switch t {
	case MsgSubscribeAllEvents, MsgUnsubscribeAllEvents, MsgWriteMultipleProperties, MsgPropertyReadings:
		return false
	}
	return true
}

// ExpectsReply reports whether the Thing answers m: not when m is one-way
// (the "oneWay" extension, see MessageType), nor when m only acts on
// another interaction without an answer of its own: an unsubscribe or
// unobserve (EndsSubscription), streamInput and streamEnd (whose effect
// shows in the session's own actionStatus messages).
func (m *Message) ExpectsReply() bool {
	if m.OneWay || m.Type.EndsSubscription() {
		return false
	}
	switch m.Type {
	case MsgStreamInput, MsgStreamEnd:
		return false
	}
	return true
}

// EndsAction reports whether m ends an action invocation or a streaming
// session: an actionStatus whose status is completed, failed or cancelled,
// or an error.
func (m *Message) EndsAction() bool {
	switch m.Type {
	case MsgError:
		return true
	case MsgActionStatus:
		switch m.Status {
		case ActionCompleted, ActionFailed, ActionCancelled:
			return true
		}
	}
	return false
}

// Ends reports whether m, a message from the Thing, is the last message of
// the interaction that req opened (spec "Request-Reply" and "One
// Request-Multiple Responses"): every error; for invokeAction an
// actionStatus that ends the action (EndsAction); for any other request
// the first message of its ReplyType (the propertyReading of a read or
// write, the actionStatus of a queryAction, …). A subscription
// (Subscribes) ends only with an error: the consumer ends it. A request
// without a ReplyType has no interaction to end, so any message ends it.
func (m *Message) Ends(req *Message) bool {
	switch {
	case m.Type == MsgError:
		return true
	case req.Type.Subscribes():
		return false
	case req.Type == MsgInvokeAction:
		return m.EndsAction()
	case req.Type.ReplyType() != "":
		return m.Type == req.Type.ReplyType()
	}
	return true
}
