package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/mongox"
)

// openEngine starts the embedded database server (FerretDB on SQLite under dir) and connects to it with the
// client mongox.Open makes for the service (the same options: one pooled connection, 30 s operation timeout),
// plus a command monitor that counts the driver commands and their round trips by command and collection.
// Every stack and every floor uses this client. close disconnects and stops the server.
func openEngine(ctx context.Context, dir string, stderr io.Writer) (db *mongox.DB, logs *logSink, stats *dbStats, close func(), err error) {
	logs = &logSink{out: stderr}
	e, err := mongox.StartEmbedded(ctx, dir, conf.Logger(logs, "info", "case-svc"))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	stats = newDBStats()
	client, err := mongo.Connect(options.Client().ApplyURI(e.URI).SetTimeout(30 * time.Second).SetAppName("cases").
		SetMaxPoolSize(1).SetMinPoolSize(1).SetMonitor(stats.monitor()))
	if err != nil {
		e.Stop()
		return nil, nil, nil, nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Ping(pctx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.Background())
		e.Stop()
		return nil, nil, nil, nil, err
	}
	// As mongox.Open does for the service: index the _id lookups of the embedded databases (docs/performance.md).
	ictx, stopIndexing := context.WithCancel(context.WithoutCancel(ctx))
	indexed := make(chan struct{})
	go func() { mongox.KeepIDsIndexed(ictx, dir, 2*time.Second, nil); indexed <- struct{}{} }()
	close = func() {
		stopIndexing()
		<-indexed
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.Disconnect(cctx)
		e.Stop()
	}
	return &mongox.DB{Database: client.Database("cases"), Client: client, Embedded: true}, logs, stats, close, nil
}

// dbStats counts driver commands by "command collection" with their round-trip times (the driver's
// Duration: from sending the command to its reply, the wait for the one pooled connection excluded).
type dbStats struct {
	mu      sync.Mutex
	started map[int64]string
	ops     map[string]opStat
}

type opStat struct {
	N int
	D time.Duration
}

func newDBStats() *dbStats {
	return &dbStats{started: map[int64]string{}, ops: map[string]opStat{}}
}

func (s *dbStats) monitor() *event.CommandMonitor {
	finish := func(e event.CommandFinishedEvent) {
		s.mu.Lock()
		defer s.mu.Unlock()
		k, ok := s.started[e.RequestID]
		if !ok {
			k = e.CommandName
		}
		delete(s.started, e.RequestID)
		st := s.ops[k]
		st.N++
		st.D += e.Duration
		s.ops[k] = st
	}
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			k := e.CommandName
			if e.CommandName == "getMore" {
				if coll, ok := e.Command.Lookup("collection").StringValueOK(); ok {
					k += " " + coll
				}
			} else if el, err := e.Command.IndexErr(0); err == nil {
				if coll, ok := el.Value().StringValueOK(); ok {
					k += " " + coll
				}
			}
			if byID(e) {
				k += " (_id)"
			}
			s.mu.Lock()
			s.started[e.RequestID] = k
			s.mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { finish(e.CommandFinishedEvent) },
		Failed:    func(_ context.Context, e *event.CommandFailedEvent) { finish(e.CommandFinishedEvent) },
	}
}

// byID reports whether a find, findAndModify, update or delete filters on exactly {_id: value}: the lookups
// the stores meant to be cheap.
func byID(e *event.CommandStartedEvent) bool {
	var q bson.RawValue
	switch e.CommandName {
	case "find":
		q = e.Command.Lookup("filter")
	case "findAndModify":
		q = e.Command.Lookup("query")
	case "update":
		q = e.Command.Lookup("updates", "0", "q")
	case "delete":
		q = e.Command.Lookup("deletes", "0", "q")
	default:
		return false
	}
	doc, ok := q.DocumentOK()
	if !ok {
		return false
	}
	els, err := doc.Elements()
	return err == nil && len(els) == 1 && els[0].Key() == "_id" && els[0].Value().Type != bson.TypeEmbeddedDocument
}

// snapshot copies the counts so far.
func (s *dbStats) snapshot() map[string]opStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]opStat, len(s.ops))
	for k, v := range s.ops {
		out[k] = v
	}
	return out
}

// since describes the commands run since the snapshot, per unit (per request, per case…) when per > 1:
// "22 commands, 41.2 ms: insert observables ×10 18.1 ms, find apikeys ×1 2.3 ms, …" (the top 5 by time).
func (s *dbStats) since(before map[string]opStat, per int) string {
	now := s.snapshot()
	type kv struct {
		k string
		opStat
	}
	var l []kv
	var n int
	var d time.Duration
	for k, v := range now {
		v.N -= before[k].N
		v.D -= before[k].D
		if v.N > 0 {
			l = append(l, kv{k, v})
			n += v.N
			d += v.D
		}
	}
	slices.SortFunc(l, func(a, b kv) int { return int(b.D - a.D) })
	u := float64(max(per, 1))
	var parts []string
	for i, x := range l {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%s %.1f ms", x.k, trimFloat(float64(x.N)/u), ms(x.D)/u))
	}
	return fmt.Sprintf("%s commands, %.1f ms: %s", trimFloat(float64(n)/u), ms(d)/u, strings.Join(parts, ", "))
}

// trimFloat writes 10 as "10" and 2.5 as "2.5".
func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}
