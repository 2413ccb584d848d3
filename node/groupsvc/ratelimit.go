package groupsvc

import "time"

// Limits of the requests this node answers, per remote peer: join and
// sync requests together.
const (
	// ServeBurst is how many requests a peer may make at once.
	ServeBurst = 32
	// ServeEvery is the sustained rate after the burst: one request every
	// ServeEvery.
	ServeEvery = 250 * time.Millisecond
)
