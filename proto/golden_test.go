package proto

import "flag"

// UpdateGolden is the one -update flag of the package's golden-file tests
// (TDs, envelopes, proofs): `go test ./proto -update` rewrites
// testdata/golden/* from the current code. Exported so the external test
// package shares it.
var UpdateGolden = flag.Bool("update", false, "rewrite testdata/golden/* from the current code")
