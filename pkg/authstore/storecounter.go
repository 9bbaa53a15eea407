package authstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
)

// ThrottleCollection is the collection of a StoreCounter.
var ThrottleCollection = docstore.Spec{
	Name:    "throttle",
	Indexes: []docstore.Index{{Name: "exp", Keys: []docstore.Key{docstore.Asc("exp")}}},
}

// StoreCounter is a Counter kept in the database, so that every replica of a service on that database shares
// the same counts: one document per key ({_id: sha256 of the key, n: attempts, exp: end of the window in ms}),
// changed only by atomic conditional updates. Its window is fixed (it starts at a key's first attempt) where
// MemoryCounter's slides: within one window, at most limit attempts are recorded, whichever replica records
// them. Expired documents are deleted by Take, at most once per sweep interval.
type StoreCounter struct {
	c   *docstore.Collection
	now func() time.Time

	mu        sync.Mutex
	lastSweep time.Time
}

// sweepEvery is how often Take deletes the expired documents.
const sweepEvery = time.Minute

// NewStoreCounter opens the throttle collection of db with the clock now (nil = time.Now).
func NewStoreCounter(ctx context.Context, db *docstore.DB, now func() time.Time) (*StoreCounter, error) {
	c, err := db.Collection(ctx, ThrottleCollection)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &StoreCounter{c: c, now: now}, nil
}

type throttleDoc struct {
	ID  string `json:"_id"`
	N   int64  `json:"n"`
	Exp int64  `json:"exp"`
}

// docID keeps logins and addresses out of the database.
func docID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// Take implements Counter. Each step is one atomic update, so concurrent Takes on any number of replicas
// record at most limit attempts per window: an increment only of a live document below the limit, a restart
// only of an expired one, an insert only of a missing one (a lost insert race retries the increment).
func (s *StoreCounter) Take(ctx context.Context, key string, limit int, window time.Duration) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	now := s.now()
	s.sweep(ctx, now)
	id, ms := docID(key), docstore.Millis(now)
	for range 4 {
		err := s.c.FindOneAndUpdate(ctx,
			docstore.And(docstore.ID(id), docstore.Gt("exp", ms), docstore.Lt("n", int64(limit))),
			nil, docstore.Inc("n", 1), docstore.FindAndUpdate{}, nil)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, docstore.ErrNotFound) {
			return false, fmt.Errorf("throttle: %w", err)
		}
		err = s.c.FindOneAndUpdate(ctx,
			docstore.And(docstore.ID(id), docstore.Lte("exp", ms)),
			nil, docstore.Set("n", 1).Set("exp", ms+window.Milliseconds()), docstore.FindAndUpdate{}, nil)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, docstore.ErrNotFound) {
			return false, fmt.Errorf("throttle: %w", err)
		}
		err = s.c.Insert(ctx, throttleDoc{ID: id, N: 1, Exp: ms + window.Milliseconds()})
		if err == nil {
			return true, nil
		}
		if !docstore.IsDuplicate(err) {
			return false, fmt.Errorf("throttle: %w", err)
		}
		// The document exists: either another replica has just created it (try again) or it is live and full.
		var d throttleDoc
		if err := s.c.Get(ctx, id, &d); err == nil && d.Exp > ms && d.N >= int64(limit) {
			return false, nil
		}
	}
	return false, nil // still racing after several rounds: refuse rather than risk passing the limit
}

// Untake implements Counter.
func (s *StoreCounter) Untake(ctx context.Context, key string) error {
	_, err := s.c.UpdateOne(ctx, docstore.And(docstore.ID(docID(key)), docstore.Gt("n", int64(0))), docstore.Inc("n", -1), false)
	return err
}

// Reset implements Counter.
func (s *StoreCounter) Reset(ctx context.Context, key string) error {
	_, err := s.c.DeleteOne(ctx, docstore.ID(docID(key)))
	return err
}

// sweep deletes the expired documents, at most once per sweepEvery.
func (s *StoreCounter) sweep(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastSweep) >= sweepEvery
	if due {
		s.lastSweep = now
	}
	s.mu.Unlock()
	if due {
		_, _ = s.c.DeleteMany(ctx, docstore.Lte("exp", docstore.Millis(now)))
	}
}

var _ auth.Counter = (*StoreCounter)(nil)
