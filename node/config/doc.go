// Package config is a node's serialisable configuration: Config, kept as
// config.json in the node's home and merged over Default; one Setting per
// leaf with its LMOS_… environment variable (settings.go; docs/config.md
// lists every one and a test keeps it in sync); validation that names the
// bad field; and what the settings mean where more than one package reads
// them (the API's access rules and limits, address filters, the
// directory's part). Load reads config.json and the environment, Write
// writes it back (mode 0600, atomically).
//
// It holds no running state: node.New takes a Config, node/p2p turns it
// into libp2p options.
package config
