// Package connector is case-svc's analysis connector, the domain side: it runs the analyzers and responders of
// analysis servers on case-svc's records and brings their results back. It owns the analyzer job records and
// the responder actions with the interfaces of their stores, the pending records its tracker resumes after a
// restart, the tracker (one loop per server: long-polls of reports, backoff while a server is down), the
// import of reports (artifacts become observables of the case, summaries fill the observable's reports), the
// responder operations applied through the case service, and the servers' status. It reaches the servers
// through the AnalysisServer interface; the HTTP client of analysis-svc that implements it is the adapter
// package analysissvc.
package connector
