// Package topicval holds what the node's gossipsub topic validators (the
// federation's announce topic, the group service's group topics) share:
// the name of a validation result, for their logs and tests.
package topicval

import (
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// ResultName returns the name of a validation result: "accept", "reject"
// or "ignore" (go-libp2p-pubsub gives ValidationResult no String method).
func ResultName(r pubsub.ValidationResult) string {
	switch r {
	case pubsub.ValidationAccept:
		return "accept"
	case pubsub.ValidationReject:
		return "reject"
	case pubsub.ValidationIgnore:
		return "ignore"
	}
	return fmt.Sprintf("ValidationResult(%d)", int(r))
}
