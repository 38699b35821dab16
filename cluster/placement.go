// Package cluster holds the building blocks for running several gatewayd
// nodes on one PostgreSQL database: where a lane goes (rendezvous placement),
// which nodes are alive (heartbeats), who owns a lane (leases with fencing
// tokens the database checks) and how a thread's rollout follows its lane
// to a new node (rollout shipping).
package cluster

import "errors"

// ErrNoNodes is returned by Place when there is no live node to place on.
var ErrNoNodes = errors.New("cluster: no live nodes to place on")

// Place returns the node that owns key among nodes by rendezvous
// (highest-random-weight) hashing: every node scores the key and the highest
// score wins. Adding a node moves only the keys it now wins (about 1/N);
// removing one moves only its own keys. The score is FNV-1a 64 with a
// finaliser, not maphash, so every process and version agrees on it.
func Place(key string, nodes []string) (string, error) {
	if len(nodes) == 0 {
		return "", ErrNoNodes
	}
	best, bestScore := "", uint64(0)
	for i, node := range nodes {
		score := placementScore(node, key)
		// Ties (practically never) go to the smaller id so the result does
		// not depend on the order of nodes.
		if i == 0 || score > bestScore || (score == bestScore && node < best) {
			best, bestScore = node, score
		}
	}
	return best, nil
}

func placementScore(node, key string) uint64 {
	// FNV-1a 64 written out so a placement allocates nothing; the zero
	// separator keeps ("ab","c") and ("a","bc") apart.
	h := uint64(fnvOffset64)
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * fnvPrime64
	}
	h *= fnvPrime64 // the zero separator byte: h ^ 0 is h
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * fnvPrime64
	}
	return mix64(h)
}

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// mix64 is MurmurHash3's fmix64. FNV-1a on inputs that differ only in their
// last bytes gives scores that differ only in low bits; the finaliser spreads
// that change over the whole word so each node's wins are uniform.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
