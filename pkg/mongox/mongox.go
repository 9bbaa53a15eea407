// Package mongox owns the services' connection to MongoDB: the driver client (with the embedded FerretDB
// default when no URI is configured), the translation of search filters to BSON, and the attachment store.
package mongox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// Config says where the database is. With an empty URI the embedded server is started under Path.
type Config struct {
	URI  string
	Name string
	Path string
	// OpTimeout bounds every driver operation (the driver's timeoutMS). Zero means 30 s.
	OpTimeout time.Duration
}

// DB is an open database with the client that reaches it.
type DB struct {
	*mongo.Database
	Client   *mongo.Client
	Embedded bool
	stop     func()
	path     string // embedded: the database folder and name, for indexIDs
	name     string
}

// Open connects to cfg.URI, or starts the embedded FerretDB (SQLite under cfg.Path) and connects to it with a
// single pooled connection: FerretDB v1 applies updates atomically only when one connection writes at a time.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*DB, error) {
	if cfg.Name == "" {
		return nil, errors.New("database name is empty")
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 30 * time.Second
	}
	uri, embedded, stop := cfg.URI, false, func() {}
	if uri == "" {
		e, err := StartEmbedded(ctx, cfg.Path, log)
		if err != nil {
			return nil, err
		}
		uri, embedded, stop = e.URI, true, e.Stop
	}
	opts := options.Client().ApplyURI(uri).SetTimeout(cfg.OpTimeout).SetAppName(cfg.Name)
	if embedded {
		opts.SetMaxPoolSize(1).SetMinPoolSize(1)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		stop()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Ping(pctx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.Background())
		stop()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	db := &DB{Database: client.Database(cfg.Name), Client: client, Embedded: embedded, stop: stop}
	if embedded {
		db.path, db.name = cfg.Path, cfg.Name
		ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			KeepIDsIndexed(ictx, cfg.Path, 5*time.Second, func(err error) {
				if log != nil {
					log.Warn("index _id lookups of the embedded database", "err", err)
				}
			})
		}()
		db.stop = func() { cancel(); <-done; stop() }
	}
	return db, nil
}

// IndexIDs makes _id lookups of the embedded database's existing collections use an index now (a background
// loop also does it every few seconds for collections created later). A no-op with MongoDB.
func (d *DB) IndexIDs(ctx context.Context) error {
	if !d.Embedded || d.path == "" {
		return nil
	}
	return indexIDs(ctx, d.path, d.name)
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.Client.Ping(ctx, readpref.Primary()) }

// Close disconnects and stops the embedded server, if any.
func (d *DB) Close(ctx context.Context) error {
	err := d.Client.Disconnect(ctx)
	d.stop()
	return err
}

// Embedded is a running in-process FerretDB.
type Embedded struct {
	URI  string
	Stop func()
}

// StartEmbedded starts FerretDB with its SQLite backend storing under dir, listening on a Unix socket inside
// dir (or on 127.0.0.1 with a free port when the socket path would be too long).
func StartEmbedded(ctx context.Context, dir string, log *slog.Logger) (*Embedded, error) {
	if dir == "" {
		return nil, errors.New("database.path is empty: set database.uri or database.path")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	listener := ferretdb.ListenerConfig{}
	sock := filepath.Join(dir, "ferretdb.sock")
	if len(sock) < 100 {
		_ = os.Remove(sock) // a socket left by a killed process
		listener.Unix = sock
	} else {
		listener.TCP = "127.0.0.1:0"
	}
	fdb, err := ferretdb.New(&ferretdb.Config{
		Listener:  listener,
		Logger:    slog.New(levelHandler{slog.LevelError, log.Handler()}), // it logs every error reply at warn
		Handler:   "sqlite",
		SQLiteURL: (&url.URL{Scheme: "file", Opaque: dir + "/"}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("start embedded database: %w", err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = fdb.Run(rctx)
	}()
	var uri string
	if listener.Unix != "" {
		// The driver takes a Unix socket as a percent-encoded host ending in .sock.
		uri = "mongodb://" + url.PathEscape(sock) + "/"
	} else {
		uri = fdb.MongoDBURI()
		if _, _, err := net.SplitHostPort(uri[len("mongodb://") : len(uri)-1]); err != nil {
			cancel()
			<-done
			return nil, fmt.Errorf("embedded database address %q: %w", uri, err)
		}
	}
	return &Embedded{URI: uri, Stop: func() { cancel(); <-done }}, nil
}

// levelHandler drops records below a level: FerretDB logs every connection at info and every error reply
// (an index listing of a new collection) at warn.
type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}
func (h levelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return levelHandler{h.min, h.Handler.WithAttrs(a)}
}
func (h levelHandler) WithGroup(n string) slog.Handler {
	return levelHandler{h.min, h.Handler.WithGroup(n)}
}

// IsDuplicate reports whether err is a unique-index violation. FerretDB 1.24 reports one raised by an update
// as an InternalError carrying SQLite's UNIQUE constraint message (extended code 2067).
func IsDuplicate(err error) bool {
	if err == nil {
		return false
	}
	if mongo.IsDuplicateKeyError(err) {
		return true
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && strings.Contains(ce.Message, "UNIQUE constraint failed")
}
