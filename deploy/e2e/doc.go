// Package e2e is the container integration suite: it starts case-svc and two analysis-svc containers from
// the images of `make images` on a Docker network of its own (testcontainers-go) and drives them over HTTP,
// faults included (servers stopped mid-job, stopped for good, replaced on their volumes).
//
// The tests carry the build tag e2e, so `go test ./...` leaves them out; run them with
//
//	make test-containers    (builds the images first; part of make test)
//	cd deploy && GOWORK=off go test -tags e2e -count=1 -v -timeout 15m ./e2e/    (after make images)
//
// (deploy/ is a module outside go.work.) TestFlow is the whole flow with jobs and responders on both
// analysis servers, whose events case-svc and the analysis servers (JobFinished) deliver as webhooks to a
// receiver container (testdata/receiver, built by the test into the FROM scratch image
// openir/e2e-webhook-receiver:dev, kept for the build cache); TestFaults stops, kills and replaces
// containers under running and waiting jobs.
//
// No image is ever pulled: a missing image fails the test with a message saying to run `make images`.
// E2E_ANALYSIS_IMAGE and E2E_CASE_IMAGE name other images (default openir/analysis-svc:dev and
// openir/case-svc:dev). Every container, network and volume a test makes is removed when it ends, failed or
// not; resources left by a run that was killed (go test's -timeout or an interrupt skip the cleanups) carry
// the label io.openir.e2e and are removed by the next run once they are an hour old. On failure the tail of
// every container's log is printed. The Ryuk reaper is off (TESTCONTAINERS_RYUK_DISABLED=true): its image
// would have to be pulled.
package e2e
