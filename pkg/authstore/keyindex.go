package authstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/openir/platform/pkg/docstore"
)

// KeyIndex looks an API key's user up by the key's keyed hash: a collection of its own, one document per key
// ({_id: keyed hash, user: login}), read by _id only. The user document holds the
// key's current hash too: an entry whose user no longer holds that hash is stale and never authenticates
// (KeyHolder compares them). That is what makes Rotate safe at every crash point without
// transactions. KeyHolder is that lookup.
//
// KeyHolder remembers the logins of the entries it has read (at most maxKnownKeys, in this process): an
// entry never changes its login (a key's hash is of 32 random bytes, so it names one user's key forever), and
// what makes a key valid is the user document, which KeyHolder reads on every call. A remembered entry since
// removed is a stale entry: its user no longer holds the hash. So an API-key request reads the user only.
type KeyIndex struct {
	c *docstore.Collection

	mu    sync.Mutex
	known map[string]string // keyed hash → login, entries read from c
}

// maxKnownKeys bounds the logins KeyHolder remembers; past it, an arbitrary one is forgotten.
const maxKnownKeys = 4096

// NewKeyIndex returns the index kept in c, a collection that holds nothing else and needs no index.
func NewKeyIndex(c *docstore.Collection) *KeyIndex {
	return &KeyIndex{c: c, known: map[string]string{}}
}

type keyEntry struct {
	ID   string `json:"_id"` // keyed hash of the key
	User string `json:"user"`
}

// Rotate replaces the key of login, whose hash was oldHash, by the key of hash newHash ("" for either: no key).
// setUser writes the new hash (and sealed key) to the user document. The order keeps every crash point safe:
// the new entry first (an entry of no user's current hash does not authenticate), then the user (which makes
// the new entry valid and the old one stale), then the old entry is removed. setUser's error is returned as
// it is.
func (k *KeyIndex) Rotate(ctx context.Context, login, oldHash, newHash string, setUser func(context.Context) error) error {
	if newHash != "" {
		if err := k.c.Insert(ctx, keyEntry{ID: newHash, User: login}); err != nil && !docstore.IsDuplicate(err) {
			return fmt.Errorf("store key of %s: %w", login, err)
		}
	}
	if err := setUser(ctx); err != nil {
		return err
	}
	if oldHash != "" && oldHash != newHash {
		k.forget(oldHash)
		if _, err := k.c.DeleteOne(ctx, docstore.ID(oldHash)); err != nil {
			return fmt.Errorf("remove old key of %s: %w", login, err)
		}
	}
	return nil
}

// Remove removes the entry of the key of login with this hash (a user being deleted: before its document,
// so that a crash leaves a user without a working key, never a key without its user).
func (k *KeyIndex) Remove(ctx context.Context, login, hash string) error {
	if hash == "" {
		return nil
	}
	k.forget(hash)
	if _, err := k.c.DeleteOne(ctx, docstore.ID(hash)); err != nil {
		return fmt.Errorf("remove key of %s: %w", login, err)
	}
	return nil
}

// KeyHolder returns the user holding the key of this hash: the entry's login, read with user, if that user's
// current key hash (hashOf) is still this one. No entry, or a stale one (left by a crash within Rotate, or the
// user's since-renewed key), is notFound; the errors of user are returned as they are.
func KeyHolder[U any](ctx context.Context, k *KeyIndex, hash string, user func(context.Context, string) (U, error),
	hashOf func(U) string, notFound error) (U, error) {
	var none U
	login, found, err := k.knownLogin(ctx, hash)
	if err != nil {
		return none, err
	}
	if !found {
		return none, notFound
	}
	u, err := user(ctx, login)
	if err != nil {
		return none, err
	}
	if hashOf(u) != hash {
		return none, notFound
	}
	return u, nil
}

// knownLogin is login, remembered: the login of an entry read before, else the entry's, read now.
func (k *KeyIndex) knownLogin(ctx context.Context, hash string) (string, bool, error) {
	k.mu.Lock()
	login, ok := k.known[hash]
	k.mu.Unlock()
	if ok {
		return login, true, nil
	}
	login, found, err := k.login(ctx, hash)
	if found && err == nil {
		k.mu.Lock()
		if len(k.known) >= maxKnownKeys {
			for h := range k.known { // forget one, whichever the map yields first
				delete(k.known, h)
				break
			}
		}
		k.known[hash] = login
		k.mu.Unlock()
	}
	return login, found, err
}

// forget drops what knownLogin remembers of an entry about to be removed (tidiness: a remembered entry of a
// removed key is stale, and KeyHolder refuses it all the same).
func (k *KeyIndex) forget(hash string) {
	k.mu.Lock()
	delete(k.known, hash)
	k.mu.Unlock()
}

// login returns the login of the entry of this hash, found false when there is none. The entry may be stale.
func (k *KeyIndex) login(ctx context.Context, hash string) (string, bool, error) {
	var e keyEntry
	err := k.c.Get(ctx, hash, &e)
	if errors.Is(err, docstore.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("find key: %w", err)
	}
	return e.User, true, nil
}
