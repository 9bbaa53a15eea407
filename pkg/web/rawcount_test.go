package web

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// chunked returns its bytes in reads of at most size.
type chunked struct {
	r    io.Reader
	size int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.size)]) }

// A body of declared length counts at most 4/3 of it in the raw budget (its buffers and the ones they replaced),
// whatever sizes the network's reads return: reads of 32 KiB used to grow it through 32K, 128K, 512K and 1M
// (1.67 MiB counted), which let an organisation's oldest reader go that far past its share.
func TestReadRaw_CountsAtMostFourThirdsOfTheDeclaredLength(t *testing.T) {
	const size = 1 << 20
	for _, read := range []int{1, 1000, 4 << 10, 32 << 10, 300 << 10} {
		p := &pools{raw: newRawBudget(64<<20, 64<<20)}
		b := &bodyLimiter{pools: p, authed: true, owner: "org", declared: size}
		body, err := b.readRaw(context.Background(), chunked{bytes.NewReader(make([]byte, size)), read}, size)
		if err != nil || len(body) != size {
			t.Fatalf("reads of %d: %d bytes, %v", read, len(body), err)
		}
		if _, per, _ := p.raw.held(); per["org"] > size*4/3 {
			t.Errorf("reads of %d: %d bytes counted for a %d-byte body, want at most %d", read, per["org"], size, size*4/3)
		}
	}
}
