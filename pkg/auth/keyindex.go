package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/openir/platform/pkg/docstore"
)

// KeyIndex looks an API key's user up by the key's keyed hash: a collection of its own, one document per key
// ({_id: keyed hash, user: login}), read by _id only. The user document holds the
// key's current hash too: an entry whose user no longer holds that hash is stale and never authenticates
// (KeyHolder compares them). That is what makes Rotate safe at every crash point without
// transactions. KeyHolder is that lookup.
type KeyIndex struct {
	c *docstore.Collection
}

// NewKeyIndex returns the index kept in c, a collection that holds nothing else and needs no index.
func NewKeyIndex(c *docstore.Collection) *KeyIndex { return &KeyIndex{c: c} }

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
	login, found, err := k.login(ctx, hash)
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
