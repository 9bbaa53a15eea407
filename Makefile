# Two commands for a fresh machine: `make run` and `make test`. Everything else is for development.
GO      ?= go
MODULES := ./pkg/... ./analysis-svc/... ./case-svc/...
export CGO_ENABLED ?= 0
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: run build test test-unit vet lint bench fuzz clean

## run: build and start both services on the embedded database; prints URLs and keys (Ctrl-C stops)
run: build
	python3 deploy/dev/run.py

## build: static binaries in bin/
build:
	$(GO) build -trimpath -o bin/analysis-svc ./analysis-svc/cmd/analysis-svc
	$(GO) build -trimpath -o bin/case-svc ./case-svc/cmd/case-svc

## test: everything CI runs
test: lint test-unit

test-unit:
	$(GO) test -count=1 -timeout 20m $(MODULES)

vet:
	$(GO) vet $(MODULES)

## lint: formatting and vet
lint: vet
	@out=$$(gofmt -l pkg analysis-svc case-svc); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: benchmarks (ours against the floor measured in the same run)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(MODULES)

## fuzz: a short run of every fuzz target
fuzz:
	$(GO) test ./pkg/search -run '^$$' -fuzz FuzzParse$$ -fuzztime 20s
	$(GO) test ./pkg/search -run '^$$' -fuzz FuzzParseRange -fuzztime 20s
	$(GO) test ./pkg/search -run '^$$' -fuzz FuzzParseSort -fuzztime 20s

clean:
	rm -rf bin
