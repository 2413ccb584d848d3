// Package proto is lmosnode's data and wire model: the W3C WoT Thing
// Description with the LMOS vocabulary, its validation against the official
// TD 1.1 JSON Schema, Data Integrity proofs (eddsa-jcs-2022) over TDs, the
// LMOS message envelope with its JSON and CBOR codecs, the rules of the
// message model that every transport applies (rules.go: who sends a
// message type, which messages open, continue or end an interaction), and
// the names that appear on the wire (protocol IDs, topics, DHT
// namespaces).
//
// proto imports nothing else of this module; every other package builds on
// it.
package proto
