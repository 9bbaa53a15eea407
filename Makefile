# Two commands for a fresh machine: `make run` and `make test`. Everything else is for development.
GO      ?= go
MODULES := ./pkg/... ./analysis-svc/... ./case-svc/...
# deploy/ is a module of its own outside go.work: its Kubernetes and testcontainers dependencies stay out of
# the services' build graph.
DEPLOY  := cd deploy && GOWORK=off
export CGO_ENABLED ?= 0
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: run reset help build test test-unit test-browser vet lint bench fuzz fuzz-short clean images

## run: build and start both services on the embedded database (.run/); prints the URLs and keys, which are also
## kept in .run/credentials.json. Stays in the foreground: Ctrl-C stops both. Refuses (non-zero exit, saying why)
## when another make run is running, a port (9000, 9001) is taken or the credentials do not match the data
run:
	@python3 deploy/dev/run.py --preflight
	@$(MAKE) --no-print-directory build
	@python3 deploy/dev/run.py

## reset: remove .run (data, keys, logs of make run) so the next make run starts from scratch; refuses while
## make run is running
reset:
	@python3 deploy/dev/run.py --reset

## help: this list
help:
	@awk '/^## [a-z][a-z0-9_-]*:/ { sub(/^## /, ""); i = index($$0, ":"); \
	      printf "make %-22s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2); next } \
	     /^## / { sub(/^## /, ""); printf "%28s%s\n", "", $$0 }' $(firstword $(MAKEFILE_LIST))

## build: static binaries in bin/
build:
	$(GO) build -trimpath -o bin/analysis-svc ./analysis-svc/cmd/analysis-svc
	$(GO) build -trimpath -o bin/case-svc ./case-svc/cmd/case-svc

## test: everything CI runs
test: lint test-unit fuzz-short test-browser test-containers

## test-unit: the Go tests of every module (no Docker needed) and make run's tests (deploy/dev/run_test.py)
test-unit:
	$(GO) test -count=1 -timeout 20m $(MODULES)
	$(DEPLOY) $(GO) test -count=1 -timeout 5m .
	python3 deploy/dev/run_test.py

## test-browser: the web interface in headless Chromium (ui-test/, a module of its own outside go.work): both
## services built and started as make run starts them, on free ports; skips, saying how to install it, without
## Debian's chromium. Screenshots go to a folder it prints (UI_SCREENSHOTS_OUT to choose it);
## UI_SCREENSHOTS=docs/img also copies the case view to docs/img/case-view.png
test-browser:
	cd ui-test && GOWORK=off $(GO) test -count=1 -timeout 15m -v ./...

## vet: go vet of every module
vet:
	$(GO) vet $(MODULES)
	$(DEPLOY) $(GO) vet ./...
	cd ui-test && GOWORK=off $(GO) vet ./...

## lint: formatting and vet
lint: vet
	@out=$$(gofmt -l pkg analysis-svc case-svc deploy ui-test); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the benchmark program: the services against floors measured in the same run; prints one table and
## writes bench/results.json (about 13 min on 2 cores, and case-bench's section 9 up to 10 min more; `-quick` on
## either command for a smoke run; `-hardening` runs case-bench's section 9 alone). case-bench
## merges its rows into the file analysis-bench writes, so it runs second.
bench:
	$(GO) run ./analysis-svc/cmd/analysis-bench -out bench/results.json
	$(GO) run ./case-svc/cmd/case-bench -out bench/results.json

## fuzz: every fuzz target for FUZZTIME each (make test runs them for 3s; `make fuzz FUZZTIME=5m` for long runs)
FUZZTIME ?= 30s
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' pkg analysis-svc case-svc | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "fuzz ./$$dir $$f $(FUZZTIME)"; \
	    $(GO) test ./$$dir -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) >/tmp/fuzz.$$$$.log 2>&1 || { cat /tmp/fuzz.$$$$.log; rm -f /tmp/fuzz.$$$$.log; exit 1; }; \
	  done; \
	done; rm -f /tmp/fuzz.$$$$.log

## fuzz-short: every fuzz target for 2000 inputs (part of make test; a count, not a duration: a -fuzztime
## duration can fail with "context deadline exceeded" on a loaded machine, a race in Go's fuzzing coordinator)
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=2000x

## clean: remove bin/ (make reset removes make run's data)
clean:
	rm -rf bin

# Container images: no image is pulled. FROM scratch plus a rootfs made from the host (CA certificates,
# passwd/group with the non-root user 65532, /tmp, /data); see deploy/README.md.
IMAGE_TAG      ?= dev
ANALYSIS_IMAGE ?= openir/analysis-svc:$(IMAGE_TAG)
CASE_IMAGE     ?= openir/case-svc:$(IMAGE_TAG)
.PHONY: image-analysis-python test-deploy

## images: the service images $(ANALYSIS_IMAGE) and $(CASE_IMAGE) (static binaries, FROM scratch, non-root)
images:
	GO=$(GO) ANALYSIS_IMAGE=$(ANALYSIS_IMAGE) CASE_IMAGE=$(CASE_IMAGE) deploy/docker/build-images.sh

## image-analysis-python: $(ANALYSIS_IMAGE)-python, with Python 3 for external analyzers (Debian base by debootstrap; root)
image-analysis-python:
	GO=$(GO) ANALYSIS_PYTHON_IMAGE=$(ANALYSIS_IMAGE)-python deploy/docker/build-python-image.sh

## test-deploy: render the Kubernetes overlays and check their wiring (the deploy module)
test-deploy:
	$(DEPLOY) $(GO) test -count=1 .

## test-containers: the container suite (deploy/e2e, build tag e2e): case-svc and two analysis-svc containers
## from the images above on a network of the test's own, the whole flow over HTTP with its webhooks delivered
## to a receiver container, then servers stopped, killed mid-job and replaced on their volumes (about 1.5 min
## after the images; never pulls an image)
.PHONY: test-containers
test-containers: images
	$(DEPLOY) $(GO) vet -tags e2e ./e2e/
	$(DEPLOY) E2E_ANALYSIS_IMAGE=$(ANALYSIS_IMAGE) E2E_CASE_IMAGE=$(CASE_IMAGE) GO=$(GO) \
		$(GO) test -tags e2e -count=1 -timeout 15m -v ./e2e/
