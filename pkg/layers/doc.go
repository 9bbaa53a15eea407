// Package layers holds no code: its test checks the import rule of the whole repository (both services and
// pkg/) with `go list`.
//
// The rule: cmd → app → api → domain ← adapters. A service's cmd/ may import anything; internal/app (the one
// place that wires the service) anything but cmd; the api layer (internal/api/**, internal/webui) the domain,
// pkg/ and itself; a domain package other domain packages and pkg/, never pkg/docstore, pkg/authstore or
// pkg/web, and it links (through any chain of imports) no database engine or driver and no Echo; an adapter
// (internal/store, internal/runner/**, internal/jobevent, case-svc's internal/analysissvc and
// internal/archive) the domain, pkg/ and its own subtree, never another adapter, the api or the app. The
// database drivers are imported only by their engines (go.mongodb.org/mongo-driver by pkg/docstore/mongo,
// modernc.org/sqlite by pkg/docstore/sqlite), Echo only by the api layer, pkg/web and pkg/webui.
//
// Known exceptions are listed in the test's allowed table, each with its reason; the list only shrinks: an
// entry that no longer matches an import fails the test too.
package layers
