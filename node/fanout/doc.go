// Package fanout carries a Thing's events to many subscribers on many nodes
// through one gossipsub topic per Thing (the publish-subscribe pattern of
// the LMOS seed spec), instead of one libp2p stream per subscriber to the
// owner node.
//
// # Topic
//
// The events of the Thing thingID published by the peer publisher travel
// on the topic
//
//	"/lmos/1/events/" + <publisher peer ID, base58btc multihash> + "/" + escape(thingID)
//
// (proto.TopicEventsPrefix; see TopicName). escape keeps the bytes
// A–Z a–z 0–9 '-' '.' '_' '~' ':' and writes every other byte of the UTF-8
// thing id as '%' followed by two upper-case hex digits, so
// "urn:example:weather" stays as is and "https://x.example/t 1" becomes
// "https:%2F%2Fx.example%2Ft%201". A topic name is valid only in this
// canonical form: a receiver escapes the thingID of the payload and
// compares strings, it never unescapes.
//
// # Payload
//
// The data of every gossipsub message is one LMOS message (proto.Message)
// encoded as JSON (proto.JSON), of messageType "event": thingID, event
// (the event's name), data, timestamp (RFC 3339 in UTC, when the owner
// published it), a fresh messageID (UUID) per event and a correlationID
// (the owner's own subscription; subscribers replace it with theirs). The
// message ID of gossipsub is the SHA-256 of the data, as for every LMOS
// topic; the fresh messageID keeps two equal events apart.
//
// Only the owner publishes: pubsub's StrictSign signs every message with
// its author's key, so "author = publisher in the topic name" is the check
// that the Thing's owner sent the event. Events are delivered in the order
// each path forwards them; gossipsub does not promise order between
// paths, so a consumer that needs it orders by timestamp.
//
// # Validator
//
// Every node that joins an events topic (owner and subscribers alike)
// registers this validator on it; other implementations must apply the
// same rules:
//
//   - Reject: the data is larger than Config.MaxEventSize (64 KiB by
//     default).
//   - Reject: the message's author (pubsub "from") is not the publisher
//     named in the topic.
//   - Reject: the data is not a JSON LMOS message valid under
//     proto.Message.Validate, its messageType is not "event", or its
//     thingID is not the Thing of the topic.
//   - Reject: its timestamp is older than Config.MaxAge (5 min) or more
//     than Config.MaxSkew (30 s) in the future, by the receiver's clock.
//   - Ignore: an event whose messageID was already accepted on this topic
//     within MaxAge + MaxSkew (a replay that outlived gossipsub's seen
//     cache of two minutes).
//   - Accept otherwise.
//
// With Deps.TopicScore set, a rejected message counts against the peer
// that forwarded it in the peer score (P4, invalid message deliveries), so
// a node relaying forged events loses its mesh places.
//
// # Groups
//
// Things restricted to groups (lmos:groups) never use these public
// topics: Publish refuses them, Subscribe refuses them with
// ErrGroupScoped, and the Invoker adapter falls back to the per-subscriber
// stream for them. Group topics arrive with group keys in a later issue.
//
// # Use
//
// One Fanout per node, on the node's PubSub (so the message-ID function,
// StrictSign, flood publishing and peer score are the node's), built with
// New after the PubSub and the Engine and closed before the PubSub's
// context is cancelled. The owner calls Publish for each own Thing with
// events (and Unpublish, then Publish again, when its TD changes or it is
// withdrawn): the Fanout subscribes to all its events through
// Deps.Local (the Engine; it is one more subscriber of the Engine's
// shared feeds, so the owner's backend is called once however many nodes
// listen) and publishes each event. Consumers call Subscribe, or reach
// remote Things' events through the Invoker adapter, which the router uses
// in place of interact.Client.Invoker(owner) so that gateways need no
// change.
//
// A topic carries events only: an owner whose backend refuses an event
// feed (404, say) has nothing to publish, so the Invoker adapter also asks
// the owner directly, for Config.Probe after each subscription, and ends
// the subscription with the owner's error if there is one (see probe.go).
// The owner's publisher retries a failing feed with back-off and logs an
// end that repeats the last one at debug level only, with an info-level
// reminder every FeedWarnEvery (logroute.Repeats).
//
// A Fanout publishes every own Thing with events as soon as Publish is
// called, whether or not another node listens (gossipsub sends nothing
// when the topic has no peers; the Engine's feed runs anyway).
package fanout
