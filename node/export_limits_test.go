package node

// APIOpenConns is the number of connections the API's listener holds open,
// for tests of APILimits.
func (n *Node) APIOpenConns() int { return n.apiLn.Open() }
