package web

import (
	"context"
	"sync"

	"github.com/openir/platform/pkg/apperr"
)

// JSONLimits bound a JSON document of a request. A cheap byte scan checks them before anything is decoded, so
// a hostile document costs one pass over its bytes and no allocation.
type JSONLimits struct {
	Depth  int   // deepest nesting of arrays and objects; 0 = 64
	Array  int   // most elements of one array; 0 = 100000
	String int64 // longest string or key, in encoded bytes; 0 = the body limit
	// Decoded bounds the memory that decoding a request's JSON may take, as the scan estimates it (an
	// overestimate: the estimate counts the decoder's buffer, map and slice growth); 0 = 32 MiB.
	Decoded int64
	// InFlight bounds the estimated memory of the decoded JSON of all requests being served at once: a request
	// whose JSON does not fit waits for room. Requests not yet authenticated share a quarter of it, so that
	// logins cannot take the room of authenticated callers. 0 = 64 MiB.
	InFlight int64
}

// Default JSON limits.
const (
	DefaultJSONDepth    = 64
	DefaultJSONArray    = 100000
	DefaultJSONDecoded  = 32 << 20
	DefaultJSONInFlight = 32 << 20
)

func (l JSONLimits) withDefaults() JSONLimits {
	if l.Depth <= 0 {
		l.Depth = DefaultJSONDepth
	}
	if l.Array <= 0 {
		l.Array = DefaultJSONArray
	}
	if l.String <= 0 {
		l.String = DefaultBodyLimit
	}
	if l.Decoded <= 0 {
		l.Decoded = DefaultJSONDecoded
	}
	if l.InFlight <= 0 {
		l.InFlight = DefaultJSONInFlight
	}
	if l.Decoded > l.InFlight {
		l.Decoded = l.InFlight
	}
	return l
}

// The memory estimate of a decoded document (encoding/json into any, numbers as json.Number), in bytes:
// calibrated against the allocations the decoder really makes (TestScanJSON_EstimateCoversAllocations),
// including the garbage of growing slices and maps.
const (
	costPerRawByte = 6   // the decoder's copy of the input, grown by doubling
	costElement    = 80  // one slot of an array, with its share of the slice's growth
	costObject     = 64  // an object (the map's header)
	costGroup      = 288 // the first group of 8 slots, made for the first member
	costMember     = 64  // one of the first 8 members of an object, its key string aside
	costBigMember  = 320 // a member past the 8th, with its share of the map's growth
	costScalar     = 32  // the boxed header of a string or number, its bytes aside
	costLiteral    = 8   // true, false, null
	costArray      = 48  // an array (its boxed slice header)
)

// errJSON is the 400 of a document over a structural limit.
func errJSON(format string, args ...any) error {
	return apperr.Errorf(apperr.BadRequest, "JSON body refused: "+format, args...)
}

// scanJSON checks b against the limits and returns the estimated memory of decoding it. It does not validate
// the syntax (the decoder does): malformed input only has to be scanned without harm.
func scanJSON(b []byte, lim JSONLimits) (int64, error) {
	type frame struct {
		array bool
		n     int
	}
	var stack []frame
	var cost int64 = costPerRawByte * int64(len(b))
	// value counts the start of a value: an element of an array (or a member's value, whose key was counted).
	value := func(c int64) error {
		cost += c
		if k := len(stack); k > 0 && stack[k-1].array {
			stack[k-1].n++
			if stack[k-1].n > lim.Array {
				return errJSON("an array has more than %d elements", lim.Array)
			}
			cost += costElement
		}
		return nil
	}
	key := true // the next string of an object is a key
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			if c == ':' {
				key = false
			}
		case ',':
			if k := len(stack); k > 0 && !stack[k-1].array {
				key = true
			}
		case '{', '[':
			if err := value(costArray); err != nil {
				return 0, err
			}
			if c == '{' {
				cost += costObject - costArray
			}
			if len(stack) >= lim.Depth {
				return 0, errJSON("nested deeper than %d levels", lim.Depth)
			}
			stack = append(stack, frame{array: c == '['})
			key = c == '{'
		case '}', ']':
			if k := len(stack); k > 0 {
				stack = stack[:k-1]
			}
			key = false
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			n := int64(min(j, len(b)) - i - 1)
			if n > lim.String {
				return 0, errJSON("a string is longer than %d bytes", lim.String)
			}
			if k := len(stack); key && k > 0 && !stack[k-1].array {
				stack[k-1].n++
				cost += n + costMember
				switch {
				case stack[k-1].n == 1:
					cost += costGroup
				case stack[k-1].n > 8:
					cost += costBigMember - costMember
				}
			} else if err := value(costScalar + n); err != nil {
				return 0, err
			}
			i = j
		default: // a number or a literal (or garbage, which the decoder refuses)
			j := i
			for j < len(b) && !delimiter(b[j]) {
				j++
			}
			c := int64(costLiteral)
			if b[i] == '-' || (b[i] >= '0' && b[i] <= '9') {
				c = costScalar + int64(j-i)
			}
			if err := value(c); err != nil {
				return 0, err
			}
			i = j - 1
		}
	}
	return cost, nil
}

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

// budget is a weighted semaphore: the estimated memory of the decoded JSON of the requests being served.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters []*waiter
}

type waiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(size int64) *budget { return &budget{size: size} }

// acquire takes n (at most the budget's size), waiting in turn for room until ctx ends.
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= n
			b.grant()
		default:
			for i, x := range b.waiters {
				if x == w {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			b.grant() // the first waiter may fit now that a larger one left
		}
		return ctx.Err()
	}
}

// release gives n back.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.grant()
}

// grant wakes the waiters that fit, in order. Called with mu held.
func (b *budget) grant() {
	for len(b.waiters) > 0 {
		w := b.waiters[0]
		if b.used+w.n > b.size {
			return
		}
		b.used += w.n
		b.waiters = b.waiters[1:]
		close(w.ready)
	}
}
