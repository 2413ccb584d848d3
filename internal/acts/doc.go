// Package acts runs A2A's conformance test corpus (ACTS, the A2A
// Conformance Test Specification 0.1: docs/acts-specification.md of the
// corpus) against an A2A agent over HTTP. It is test code of the node's
// A2A bridge (node/acts_test.go); the corpus is embedded (Corpus).
//
// A test runs once per transport binding: JSON-RPC and HTTP+JSON at the
// URLs the agent's card lists for them (skipped when it lists none), gRPC
// never (the runner has none). Abstract operations map to the methods and
// routes of A2A 1.0 §5.3 (where the ACTS table differs — push config
// method names, POST on :subscribe — A2A wins, as ACTS §6.2 says), errors
// to their A2A type by JSON-RPC code or REST ErrorInfo reason (A2A §5.4,
// §11.6).
//
// The runner implements what the corpus uses: expect (status, body),
// expect_error (error_type or code, message, data), expect_stream
// (min/max_count, monotonic_state, events by index or any position,
// each_event, final_event), captures and {{variables}}, repeat/until,
// named and collection (any/all/none) assertions, client steps (through a
// parser the caller supplies) and the assertion operators in assert.go.
// Preconditions the card does not meet, behaviours the SUT lacks, runner
// requirements and tests tagged runner-special (which need runner support
// beyond their steps: concurrent streams, webhooks, credentials, header
// or schema checks) are skipped with the reason. Where the corpus departs
// from the ACTS grammar (assertions straight under expect, `code` for
// `error_type`, `status: error`, taskId beside the message, 0.3 operation
// names) the runner reads it the way its authors evidently meant; each
// such reading is commented where it is made.
package acts
