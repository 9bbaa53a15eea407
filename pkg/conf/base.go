package conf

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/background"
	"github.com/openir/platform/pkg/docstore"
)

// Base is what a service built from the common keys holds besides its own services: its logger, its
// database (opened by Open, or the caller's), the keyring of auth.secret, and its background work, which
// Close stops in the order it started before closing the database it opened.
type Base struct {
	Log  *slog.Logger
	DB   *docstore.DB
	Keys *auth.Keyring

	ownDB bool
	bg    background.Group
}

// Open opens the database of database.* unless b.DB is set (an empty database.uri: the embedded SQLite file
// database.path/<database.name>.db), then reads the keyring of auth.secret; envPrefix (ANALYSIS, CASE) names
// the service's env variables in messages.
func (b *Base) Open(ctx context.Context, c Common, envPrefix string) error {
	if b.DB == nil {
		db, err := docstore.Open(ctx, docstore.Config{URI: c.Database.URI, Name: c.Database.Name, Path: c.Database.Path}, b.Log)
		if err != nil {
			return err
		}
		b.DB, b.ownDB = db, true
		b.Log.Info("database ready", "engine", db.Engine(), "name", c.Database.Name)
	}
	secret, err := AuthSecret(Security{Mode: c.Mode, Secret: c.Auth.Secret, DataPath: c.Database.Path,
		Embedded: b.DB.Embedded(), AllowInsecure: c.HTTP.AllowInsecureCredentials, EnvPrefix: envPrefix}, b.Log)
	if err != nil {
		return err
	}
	if b.Keys, err = auth.NewKeyring(secret); err != nil {
		return fmt.Errorf("auth.secret: %w", err)
	}
	return nil
}

// Go runs f as background work until parent ends, the returned stop (which waits for it), or Close.
func (b *Base) Go(parent context.Context, f func(context.Context)) (stop func()) {
	return b.bg.Go(parent, f)
}

// Close stops the background work in the order it started, then closes the database Open opened.
func (b *Base) Close(ctx context.Context) {
	b.bg.Stop()
	if b.ownDB && b.DB != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = b.DB.Close(cctx)
	}
}
