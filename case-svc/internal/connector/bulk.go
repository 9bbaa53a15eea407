package connector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Planned is an analyzer a bulk run asks for: by name on a server, with optional parameters.
type Planned struct {
	AnalysisID string
	Analyzer   string
	Parameters map[string]any
}

// Skipped is a (observable, analyzer) pair a bulk run did not create a job for, and why.
type Skipped struct {
	ObservableID string
	DataType     string
	Data         string
	AnalysisID   string
	Analyzer     string
	Reason       string // one of the Skip… codes
	Message      string
	// JobID is the equal job that made this one unnecessary ("" for other reasons).
	JobID string
}

// Skip reasons, stable words a client can switch on (the message says more).
const (
	SkipNoAnalyzer = "noAnalyzer" // the set has no analyzer for the data type, or the server has none of this name
	SkipTLP        = "tlp"        // the observable's TLP is above the analyzer's limit
	SkipPAP        = "pap"        // the parent's PAP is above the analyzer's limit
	SkipRecent     = "recentJob"  // an equal job (same observable, server, analyzer) is recent and not failed
	SkipDone       = "sameRequest"
	SkipServer     = "unknownServer" // the server is not configured for the organisation
)

// BulkResult is what a bulk run did: the jobs it created and the pairs it skipped with their reasons.
type BulkResult struct {
	Created []Job
	Skipped []Skipped
}

// BulkOptions tune a bulk run.
type BulkOptions struct {
	// Key makes the run idempotent: the job of each (observable, server, analyzer) gets an id derived from
	// it, so a retried request with the same key creates nothing new, even while the first is still running.
	Key string
	// Recent is how old an equal job may be and still make a new one unnecessary (0: 10 minutes); Force
	// ignores equal jobs.
	Recent time.Duration
	Force  bool
	// Rule and Firing name the automation rule and its firing the run is made for ("" for a user's request).
	Rule, Firing string
	// DryRun computes what would be created without creating anything.
	DryRun bool
}

// DefaultRecent is how long an equal job makes a bulk run skip a pair.
const DefaultRecent = 10 * time.Minute

// RunBulk creates one analyzer job per (observable, planned analyzer) and hands them to the tracker, which
// submits them as it submits any job (after a restart, or when a server comes back). plan gives the
// analyzers for a data type. The observables must be the caller's organisation's, of one case or one alert
// (the caller loaded them through the case service). A pair is skipped, with its reason, when the server does
// not offer an analyzer of that name for the data type, the observable's TLP or the parent's PAP is above the
// analyzer's limit (when the server says it), or an equal job is recent. A server that does not answer does
// not stop the run: its jobs are made by name and submitted when it answers.
func (a *Analyses) RunBulk(ctx context.Context, c identity.Caller, pap int, obs []cases.Observable, plan func(dataType string) []Planned, opt BulkOptions) (BulkResult, error) {
	if err := c.Require(identity.ManageAnalyse); err != nil {
		return BulkResult{}, err
	}
	if opt.Recent <= 0 {
		opt.Recent = DefaultRecent
	}
	list := func(srv AnalysisServer, dataType string) []RemoteWorker { return a.listed(ctx, srv, dataType) }
	var res BulkResult
	skip := func(o cases.Observable, p Planned, reason, jobID, format string, args ...any) {
		res.Skipped = append(res.Skipped, Skipped{ObservableID: o.ID, DataType: o.DataType, Data: o.Data,
			AnalysisID: p.AnalysisID, Analyzer: p.Analyzer, Reason: reason, JobID: jobID, Message: fmt.Sprintf(format, args...)})
	}
	now := a.clock()
	woken := map[string]bool{}
	for _, o := range obs {
		if o.Org != c.Org {
			return BulkResult{}, cases.ErrObservableNotFound
		}
		ps := plan(o.DataType)
		if len(ps) == 0 {
			skip(o, Planned{}, SkipNoAnalyzer, "", "no analyzer for data type %s", o.DataType)
			continue
		}
		for _, p := range ps {
			srv, err := a.server(c, p.AnalysisID)
			if err != nil {
				skip(o, p, SkipServer, "", "analysis server %q is not configured for the organisation", p.AnalysisID)
				continue
			}
			var w *RemoteWorker
			if ws := list(srv, o.DataType); ws != nil {
				for i := range ws {
					if ws[i].Name == p.Analyzer {
						w = &ws[i]
						break
					}
				}
				if w == nil {
					skip(o, p, SkipNoAnalyzer, "", "analysis server %s has no analyzer %s for data type %s", p.AnalysisID, p.Analyzer, o.DataType)
					continue
				}
				if w.MaxTLP != nil && o.TLP > *w.MaxTLP {
					skip(o, p, SkipTLP, "", "TLP %d is above the analyzer's limit %d", o.TLP, *w.MaxTLP)
					continue
				}
				if w.MaxPAP != nil && pap > *w.MaxPAP {
					skip(o, p, SkipPAP, "", "PAP %d is above the analyzer's limit %d", pap, *w.MaxPAP)
					continue
				}
			}
			id := record.NewID(now)
			if opt.Key != "" {
				id = bulkJobID(c.Org, opt.Key, o.ID, p)
				done, err := a.madeBefore(ctx, id, srv.Name(), c.Org, now)
				if err != nil {
					return res, err
				}
				if done {
					skip(o, p, SkipDone, id, "created by an earlier request with the same key")
					continue
				}
			}
			if !opt.Force {
				prev, err := a.recentJob(ctx, c.Org, o.ID, p, now.Add(-opt.Recent))
				if err != nil {
					return res, err
				}
				if prev.ID != "" {
					skip(o, p, SkipRecent, prev.ID, "an equal job (%s, %s) was created at %s", prev.ID, prev.Status, prev.CreatedAt.Format(time.RFC3339))
					continue
				}
			}
			j := Job{ID: id, Org: c.Org, ObservableID: o.ID, CaseID: o.CaseID, AlertID: o.AlertID,
				AnalyzerName: p.Analyzer, Status: JobWaiting, AnalysisID: srv.Name(), Parameters: p.Parameters, Rule: opt.Rule, Firing: opt.Firing,
				Meta: record.Meta{CreatedBy: c.Login, CreatedAt: now}}
			if w != nil {
				j.AnalyzerID = w.ID
			}
			if opt.DryRun {
				res.Created = append(res.Created, j)
				continue
			}
			if err := a.jobs.Create(ctx, j); err != nil {
				if errors.Is(err, ErrJobExists) {
					skip(o, p, SkipDone, j.ID, "created by an earlier request with the same key")
					continue
				}
				return res, err
			}
			// The pending record is what the tracker submits from; written after the job, a crash in between
			// leaves a Waiting job without one, which a retried request with the same key adds (madeBefore).
			if err := a.pending.AddPending(ctx, Pending{ID: j.ID, Kind: "job", Server: srv.Name(), Org: c.Org, Since: now}); err != nil {
				return res, err
			}
			res.Created = append(res.Created, j)
			woken[srv.Name()] = true
		}
	}
	for s := range woken {
		a.wake(s)
	}
	return res, nil
}

// listTTL and downTTL are how long a server's analyzer list for a data type, or its failure to answer, is
// reused by bulk runs: a rule firing on each of many observables must not ask (nor wait for a dead server)
// each time.
const (
	listTTL = 30 * time.Second
	downTTL = 30 * time.Second
)

type listKey struct{ server, dataType string }

type listEntry struct {
	ws []RemoteWorker // nil: the server did not answer
	at time.Time
}

// listed returns the analyzers of a server for a data type, from a short-lived cache; nil when the server
// does not answer (the run then makes its jobs by name).
func (a *Analyses) listed(ctx context.Context, srv AnalysisServer, dataType string) []RemoteWorker {
	k := listKey{srv.Name(), dataType}
	a.mu.Lock()
	e, ok := a.lists[k]
	a.mu.Unlock()
	now := time.Now()
	if ok && (e.ws != nil && now.Sub(e.at) < listTTL || e.ws == nil && now.Sub(e.at) < downTTL) {
		return e.ws
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second) // a dead server's retries must not stall the run long
	ws, err := srv.Workers(cctx, false, dataType)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		a.cfg.Log.Warn("list analyzers for a bulk run; jobs made by name", "server", srv.Name(), "err", err)
		ws = nil
	} else if ws == nil {
		ws = []RemoteWorker{}
	}
	a.mu.Lock()
	a.lists[k] = listEntry{ws: ws, at: now}
	a.mu.Unlock()
	return ws
}

// madeBefore reports whether the job id exists (a retried request with the same key); a job that was never
// handed to its server gets its pending record again (idempotent), in case the first request stopped between
// the two writes.
func (a *Analyses) madeBefore(ctx context.Context, id, server, org string, now time.Time) (bool, error) {
	j, err := a.jobs.Job(ctx, id)
	if errors.Is(err, ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if j.Status == JobWaiting && j.AnalysisJobID == "" {
		if err := a.pending.AddPending(ctx, Pending{ID: j.ID, Kind: "job", Server: server, Org: org, Since: now}); err != nil {
			return true, err
		}
		a.wake(server)
	}
	return true, nil
}

// recentJob returns the newest job of the observable made on the same server with the same analyzer since
// the given time that has not failed (the zero Job when there is none).
func (a *Analyses) recentJob(ctx context.Context, org, observableID string, p Planned, since time.Time) (Job, error) {
	f := record.And(search.Node{Op: search.OpAnd, Children: []search.Node{
		{Op: search.OpEq, Path: "analysisId", Value: p.AnalysisID},
		{Op: search.OpEq, Path: "analyzerName", Value: p.Analyzer},
		{Op: search.OpGte, Path: "createdAt", Value: since.UnixMilli()},
		{Op: search.OpNot, Children: []search.Node{{Op: search.OpEq, Path: "status", Value: JobFailure}}},
	}}, record.InOrg(org))
	js, _, err := a.jobs.ListByObservable(ctx, observableID, f, search.Page{Limit: 1})
	if err != nil || len(js) == 0 {
		return Job{}, err
	}
	return js[0], nil
}

// bulkJobID is the id of a bulk run's job made with an idempotency key: the same key, observable, server
// and analyzer give the same id, so the job store refuses the second one.
func bulkJobID(org, key, observableID string, p Planned) string {
	h := sha256.New()
	for _, s := range []string{org, key, observableID, p.AnalysisID, p.Analyzer} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "~k" + hex.EncodeToString(h.Sum(nil))[:30]
}

// JobRecord returns a job by id, whatever its organisation (the automation engine reads the job that imported
// an observable; no caller is involved).
func (a *Analyses) JobRecord(ctx context.Context, id string) (Job, error) { return a.jobs.Job(ctx, id) }

// CountRuleJobs counts the jobs a rule (any rule: "") made in the organisation since a time (budgets).
func (a *Analyses) CountRuleJobs(ctx context.Context, org, rule string, since time.Time) (int64, error) {
	return a.jobs.CountRuleJobs(ctx, org, rule, since)
}

// Serves reports whether the named analysis server is configured for the caller's organisation.
func (a *Analyses) Serves(c identity.Caller, name string) bool {
	s, ok := a.servers[name]
	return ok && s.Serves(c.Org)
}

// ResponderNamed finds, for an automation rule, the responder of this name that accepts the data type
// ("thehive:case"…) on the named server, or on the first server of the caller's organisation, in
// configuration order, that offers it (analysisID ""). It returns the server's name and the responder as the
// server lists it (its id, and its TLP and PAP limits when the server says them). It fails NotFound when no
// server that answered offers it, Unavailable when none did and a server that might offer it could not be
// reached (the rule tries again later), or with a server's refusal to list its responders.
func (a *Analyses) ResponderNamed(ctx context.Context, c identity.Caller, analysisID, dataType, name string) (string, RemoteWorker, error) {
	names := a.usable(c)
	if analysisID != "" {
		srv, err := a.server(c, analysisID)
		if err != nil {
			return "", RemoteWorker{}, err
		}
		names = []string{srv.Name()}
	}
	var down []string
	var refused error
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second) // the rules engine must not wait long for a dead server
		ws, err := a.servers[n].Workers(cctx, true, dataType)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return "", RemoteWorker{}, ctx.Err()
			}
			a.cfg.Log.Warn("list responders for a rule", "server", n, "err", err)
			if apperr.Is(err, apperr.Unavailable) || errors.Is(err, context.DeadlineExceeded) {
				down = append(down, n)
			} else if refused == nil {
				refused = err
			}
			continue
		}
		for _, w := range ws {
			if w.Name == name {
				return n, w, nil
			}
		}
	}
	if len(down) > 0 {
		return "", RemoteWorker{}, apperr.Errorf(apperr.Unavailable, "analysis server %s is unavailable", strings.Join(down, ", "))
	}
	if refused != nil {
		return "", RemoteWorker{}, refused
	}
	return "", RemoteWorker{}, apperr.Errorf(apperr.NotFound, "no analysis server offers the responder %s for %s", name, dataType)
}
