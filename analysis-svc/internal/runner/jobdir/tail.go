package jobdir

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultTailSize is how much of a worker's console output is kept.
const DefaultTailSize = 64 << 10

// Tail is an io.Writer that keeps the last bytes written to it (at most twice its size in memory). It is
// safe for concurrent use.
type Tail struct {
	mu        sync.Mutex
	size      int
	buf       []byte
	truncated bool
}

// NewTail keeps the last size bytes (DefaultTailSize when size <= 0).
func NewTail(size int) *Tail {
	if size <= 0 {
		size = DefaultTailSize
	}
	return &Tail{size: size}
}

// Write keeps the end of p. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.size {
		p = p[len(p)-t.size:]
		t.truncated = true
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.size {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.size:]...)
		t.truncated = true
	}
	return n, nil
}

// String is the kept output as valid UTF-8, starting with "…(truncated)\n" when earlier output was dropped.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	cut := t.truncated
	if len(b) > t.size {
		b, cut = b[len(b)-t.size:], true
	}
	if cut {
		// do not start in the middle of a character
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		return "…(truncated)\n" + s
	}
	return s
}
