package analysis

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
)

// Catalog holds the definitions this server can run: fixed ones (built-ins, given to NewCatalog) and the
// ones read from analyzer.paths and responder.paths, which a scan replaces (at start-up and on POST
// /api/{analyzer,responder}definition/scan). Readers always see one whole catalog: a scan builds the new one
// aside and swaps it in.
type Catalog struct {
	fixed map[string]Definition // by kind + ":" + id
	cur   atomic.Pointer[map[string]Definition]

	mu        sync.Mutex // one scan at a time
	loaded    map[Kind]map[string]Definition
	warnings  map[Kind][]PathWarning
	scanner   Scanner
	executors Executors
	log       *slog.Logger
}

// NewCatalog indexes fixed definitions. When two share a kind and id the first wins (built-ins come first).
func NewCatalog(defs ...Definition) *Catalog {
	c := &Catalog{fixed: map[string]Definition{}, loaded: map[Kind]map[string]Definition{},
		warnings: map[Kind][]PathWarning{}, log: slog.New(slog.DiscardHandler)}
	for _, d := range defs {
		k := catalogKey(d.Kind, d.ID)
		if _, ok := c.fixed[k]; !ok {
			c.fixed[k] = c.resolve(d)
		}
	}
	c.publish()
	return c
}

func catalogKey(kind Kind, id string) string { return string(kind) + ":" + id }

// Definition returns a definition by kind and id.
func (c *Catalog) Definition(kind Kind, id string) (Definition, bool) {
	d, ok := (*c.cur.Load())[catalogKey(kind, id)]
	return d, ok
}

// Definitions lists the definitions of a kind, sorted by id.
func (c *Catalog) Definitions(kind Kind) []Definition {
	var out []Definition
	for _, d := range *c.cur.Load() {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Scanner reads the definitions of one kind from the configured paths (analyzer.paths or responder.paths).
type Scanner func(kind Kind) ScanResult

// ScanResult is what a Scanner found.
type ScanResult struct {
	Definitions []Definition        // the definitions this server can run
	Refused     []RefusedDefinition // entries not loaded, each with its file and reason
	Warnings    []PathWarning       // configured paths that yield no definition
}

// RefusedDefinition is a definition file (or an entry of one) that was not loaded.
type RefusedDefinition struct {
	File       string `json:"file"`
	Definition string `json:"definition,omitempty"` // its id, when it could be read
	Reason     string `json:"reason"`
}

// PathWarning is a configured definition path that yields no definition.
type PathWarning struct {
	Setting string // analyzer.paths or responder.paths
	Index   int    // position in the setting
	Path    string
	Message string // what was found, and a hint (e.g. the path is one level too high)
}

// String is the warning for the scan answer: the setting's entry, not its path (Message names paths relative
// to the configured ones; the log has the path).
func (w PathWarning) String() string {
	return fmt.Sprintf("%s[%d]: %s", w.Setting, w.Index, w.Message)
}

// Public is the warning without the path, for GET /api/status (which anyone may read).
func (w PathWarning) Public() string {
	return fmt.Sprintf("%s[%d] yields no definition (the service's log and POST /api/%sdefinition/scan name the path and why)",
		w.Setting, w.Index, kindOfSetting(w.Setting))
}

func kindOfSetting(setting string) string {
	if setting == "responder.paths" {
		return string(KindResponder)
	}
	return string(KindAnalyzer)
}

// ScanReport is the outcome of one scan of a kind.
type ScanReport struct {
	Kind        Kind
	Added       []string // definition ids
	Changed     []string
	Removed     []string
	Unchanged   int
	Refused     []RefusedDefinition
	Warnings    []string // PathWarning.String
	Definitions int      // definitions of the kind after the scan, built-ins included
}

// SetExecutors sets what runs the definitions' jobs: every definition, fixed, loaded now or by later scans, is
// resolved to its Executor once, here or when a scan takes it in, never per job.
func (c *Catalog) SetExecutors(e Executors) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.executors = e
	for k, d := range c.fixed {
		c.fixed[k] = c.resolve(d)
	}
	for _, defs := range c.loaded {
		for id, d := range defs {
			defs[id] = c.resolve(d)
		}
	}
	c.publish()
}

// resolve is d with its executor.
func (c *Catalog) resolve(d Definition) Definition {
	d.executor = nil
	if c.executors != nil {
		d.executor = c.executors.Executor(d)
	}
	return d
}

// publish swaps in the catalog of the fixed and loaded definitions.
func (c *Catalog) publish() {
	n := len(c.fixed)
	for _, defs := range c.loaded {
		n += len(defs)
	}
	all := make(map[string]Definition, n)
	for k, d := range c.fixed {
		all[k] = d
	}
	for _, defs := range c.loaded {
		for id, d := range defs {
			all[catalogKey(d.Kind, id)] = d
		}
	}
	c.cur.Store(&all)
}

// SetScanner sets how scans read the configured paths and where their warnings are logged. Without a
// scanner a scan finds nothing (only the fixed definitions remain).
func (c *Catalog) SetScanner(s Scanner, log *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scanner = s
	if log != nil {
		c.log = log
	}
}

// Rescan re-reads the definitions of kind and replaces those of the previous scan at once. Definitions whose
// id is taken by a fixed one are refused. Each refusal and each path warning is logged.
func (c *Catalog) Rescan(kind Kind) ScanReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	var res ScanResult
	if c.scanner != nil {
		res = c.scanner(kind)
	}
	rep := ScanReport{Kind: kind, Refused: append([]RefusedDefinition{}, res.Refused...),
		Added: []string{}, Changed: []string{}, Removed: []string{}, Warnings: []string{}}
	next := map[string]Definition{}
	for _, d := range res.Definitions {
		if d.Kind != kind {
			continue
		}
		if _, taken := c.fixed[catalogKey(kind, d.ID)]; taken {
			r := RefusedDefinition{File: d.SourceName, Definition: d.ID, Reason: "the id is taken by a built-in definition"}
			if r.File == "" {
				r.File = filepath.Base(d.Source) // never a server path in the answer
			}
			c.log.Warn("definition refused", "kind", string(kind), "file", d.Source, "definition", r.Definition, "reason", r.Reason)
			rep.Refused = append(rep.Refused, r)
			continue
		}
		if _, dup := next[d.ID]; dup {
			continue // the Scanner keeps the first of a duplicate id and reports the others
		}
		next[d.ID] = d
	}
	prev := c.loaded[kind]
	for id, d := range next {
		old, ok := prev[id]
		switch {
		case !ok:
			rep.Added = append(rep.Added, id)
		case !sameDefinition(old, d):
			rep.Changed = append(rep.Changed, id)
		default:
			rep.Unchanged++
		}
	}
	for id := range prev {
		if _, ok := next[id]; !ok {
			rep.Removed = append(rep.Removed, id)
		}
	}
	sort.Strings(rep.Added)
	sort.Strings(rep.Changed)
	sort.Strings(rep.Removed)
	for _, w := range res.Warnings {
		c.log.Warn("definition path yields no definition", "kind", string(kind), "setting", w.Setting,
			"index", w.Index, "path", w.Path, "reason", w.Message)
		rep.Warnings = append(rep.Warnings, w.String())
	}
	for id, d := range next {
		next[id] = c.resolve(d)
	}
	c.loaded[kind] = next
	c.warnings[kind] = res.Warnings
	c.publish()
	for _, d := range *c.cur.Load() {
		if d.Kind == kind {
			rep.Definitions++
		}
	}
	return rep
}

// Warnings are the path warnings of the last scans, without paths (see PathWarning.Public).
func (c *Catalog) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, k := range []Kind{KindAnalyzer, KindResponder} {
		for _, w := range c.warnings[k] {
			out = append(out, w.Public())
		}
	}
	return out
}

// sameDefinition compares two loaded definitions (they have no Builtin function), their executors aside.
func sameDefinition(a, b Definition) bool {
	a.Builtin, b.Builtin, a.executor, b.executor = nil, nil, nil, nil
	a.SourceName, b.SourceName = "", "" // its configured path's index may move; the file is Source
	return reflect.DeepEqual(a, b)
}
