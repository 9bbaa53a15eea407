// Package ids makes the record ids both services store: hexadecimal strings that sort by creation date,
// then by the order this process made them, then at random, so that ids made in the same millisecond by
// one process never collide and ids made by several replicas collide only by chance (one in 2^32 for two
// ids of the same millisecond and sequence number).
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
)

// Generator makes ids; its zero value is ready. One Generator per process (a package variable) is what keeps
// the ids of one millisecond apart.
type Generator struct{ seq atomic.Uint64 }

// New returns a 27-character id for a record dated now.
func (g *Generator) New(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return fmt.Sprintf("%011x%08x%08x", now.UnixMilli(), g.seq.Add(1)&0xffffffff, binary.BigEndian.Uint32(b[:]))
}
