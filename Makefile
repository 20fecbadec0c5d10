# dlock: a Redis module for distributed locks with fencing tokens, and its quorum client.
# `make run` and `make test` work on a fresh Debian machine: they install what is missing.

CARGO        ?= cargo
MODULE       := target/release/libdlock.so
REDIS_PORT   ?= 6379

.PHONY: all deps build run test model model-ci model-deep partitions partitions-ci partitions-quick partitions-deps bench-waiters bench-handoff bench-top bench-scale compat compat-servers compat-upgrade memcheck chaos chaos-quick fuzz bench bench-quick bench-server bench-instructions bench-instructions-ab bench-shared bench-capacity bench-multi bench-java bench-handoff-limit bench-tax bench-gate-tax bench-elect cluster redis-cluster fmt lint clean dist dist-deps dist-test

all: build

# Installs Debian packages that are missing (root or passwordless sudo needed only when something
# is): redis-server, libclang-dev (bindgen), gcc (the chaos suite's clock shim).
deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	dpkg -s libclang-dev >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(CARGO) build --release

$(MODULE): build

# A local Redis on 127.0.0.1:$(REDIS_PORT) with the module and embedded defaults (Ctrl-C stops);
# 6379 taken: make run REDIS_PORT=6380.
run: build
	redis-server --port $(REDIS_PORT) --bind 127.0.0.1 --save "" --appendonly no \
	  --loadmodule $(CURDIR)/$(MODULE)

# Unit and integration tests against real redis-server processes, the Python client's, the Node
# client's (make node-test), every example of the docs and the install from a clean clone (make
# docs-test), the signal-sensitive tests again with SIGINT/SIGTERM ignored and no terminal, the
# monitoring tests (real redis_exporter, promtool, tmux), the model check, the partitions subset
# and the quick chaos suite; a line per suite with its time, and the last line totals the tests
# ("total: N passed, M failed"). The full chaos suite has its own target (chaos).
test: build
	bash scripts/test.sh

# The Python client (python/): the sync files generated from the asyncio ones are up to date
# (python/tools/unasync.py --check), ruff, mypy --strict and pytest against real redis-server nodes
# (and the Rust CLI, for interop), in a venv of its own, python/.venv. Installs python3-venv when
# missing; needs PyPI, and fails loudly without it (CI must not skip this silently). ~1 min.
PYTHON  ?= python3
PY_VENV := python/.venv

.PHONY: python-test python-venv monitoring-deps monitoring-test
python-venv:
	@$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || { \
	  echo "installing: python3-venv"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv >/dev/null; }
	@command -v openssl >/dev/null 2>&1 || { \
	  echo "installing: openssl (the Python TLS tests make their certificates with it)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openssl >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing: postgresql (the guarded-write tests start their own, initdb in a temp dir; no cluster or service is made)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' | $$SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq -o Dpkg::Options::=--force-confold postgresql >/dev/null; }
	@[ -x $(PY_VENV)/bin/pip ] || $(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check ./python -r python/requirements-test.txt \
	  || { echo "python-test: pip install failed (PyPI unreachable?)" >&2; exit 1; }
	rm -rf python/build

python-test: build python-venv
	cd python && .venv/bin/python tools/unasync.py --check
	cd python && .venv/bin/ruff check src tests tools && .venv/bin/ruff format --check src tests tools
	cd python && .venv/bin/mypy --strict src
	cd python && .venv/bin/python -m pytest -q -p timeout --timeout 120 --durations=8

# The Node client (node/): Node 20+ and npm (installed from Debian when missing; Debian 12's
# nodejs is 18, too old: install Node 20+ another way there), its npm packages from
# node/package-lock.json (`npm ci` when node_modules is missing or the lock changed), then the
# strict type check, the build (ESM + CommonJS + .d.ts) and `npm test` against real redis-server
# nodes (and the Rust CLI and the Python venv, when present, for interop). ~15 s.
.PHONY: node-deps node-test
node-deps:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "installing: nodejs npm"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || { \
	  echo "node-test: Node 20 or later is needed, found $$(node --version)" >&2; exit 1; }

node/node_modules/.installed: node/package-lock.json
	cd node && npm ci --no-audit --no-fund
	touch $@

# `npm test` builds first (its pretest: the ESM and CommonJS builds and the tests' own tsc, each a
# strict type check), so no separate typecheck or build runs here.
node-test: build node-deps node/node_modules/.installed
	cd node && npm test

# The Go client (go/, module dlock.dev/dlock; docs/go.md), built as any Go module: go/go.mod and
# go/go.sum (redigo, redisc, go-redis v9; redsync for the interop test) fetched from the Go
# module proxy (GOPROXY, proxy.golang.org by default) into the module cache; a proxy that cannot
# be reached fails `go mod download` with a line saying so. go/go.mod's go line (1.26, which
# go-redis v9.23 needs) is fetched from the proxy too when the local go is older
# (GOTOOLCHAIN=auto, Go 1.21 and newer); make go-deps installs Debian's golang-go only when there
# is no go at all. staticcheck is honnef.co/go/tools' at GO_STATICCHECK, built by that toolchain
# into target/go/bin (Debian's go-staticcheck is built for Go 1.19 and cannot read newer export
# data). gofmt -l empty, go vet, staticcheck, then go test against real redis-server nodes (the
# Rust CLI, and Python's venv and Node's build when present, for interop), each test on the
# driver its name picks (DLOCK_GO_DRIVER=redigo|goredis forces one: docs/go.md). ~1.5 min.
.PHONY: go-deps go-test
GO_STATICCHECK := v0.8.2
GO_ENV := GOTOOLCHAIN=auto
go-deps:
	@command -v go >/dev/null 2>&1 || { \
	  echo "installing: golang-go"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq golang-go >/dev/null; }
	@cd go && $(GO_ENV) go mod download || { \
	  echo "go-deps: cannot fetch go/go.mod's modules (or its Go toolchain) from $$(go env GOPROXY): is the Go module proxy reachable? (Go 1.21 or newer fetches the toolchain)" >&2; exit 1; }
	@cd go && GOBIN=$(CURDIR)/target/go/bin $(GO_ENV) go install honnef.co/go/tools/cmd/staticcheck@$(GO_STATICCHECK)

go-test: build go-deps
	@set -e; export $(GO_ENV); cd go; \
	  unformatted=$$("$$(go env GOROOT)/bin/gofmt" -l .); [ -z "$$unformatted" ] || { echo "gofmt -l: $$unformatted" >&2; exit 1; }; \
	  go vet ./...; ../target/go/bin/staticcheck ./...; \
	  go test -count=1 -timeout 600s -v ./...

# The Java client (java/, Maven, Java 17 bytecode on Lettuce; docs/java.md): the machine's JDK
# and Maven, nothing installed here (it fails loudly when mvn is missing); mvn -B verify compiles
# with -Xlint:all -Werror and runs JUnit 5 against real redis-server nodes. Offline (-o) first,
# since ~/.m2 holds the dependencies after the first build; online when Maven says offline mode
# lacks something. Then the virtual-thread test (src/test-java21/, profile vthreads) on Java 25
# (JAVA25_HOME); the time both took is reported. The first run cleans: a class the Java 25 run
# compiled would not load on 17.
JAVA25_HOME ?= /usr/lib/jvm/temurin-25-jdk-amd64
.PHONY: java-test
java-test: build
	@command -v mvn >/dev/null 2>&1 || { echo "java-test: mvn is missing: install Maven (and a JDK 17+)" >&2; exit 1; }
	@start=$$(date +%s); cd java; log=$$(mktemp); mvn -B -o clean verify >"$$log" 2>&1; rc=$$?; cat "$$log"; \
	  if [ $$rc -ne 0 ] && grep -q "offline mode" "$$log"; then \
	    echo "java-test: resolving online" >&2; mvn -B clean verify; rc=$$?; fi; rm -f "$$log"; \
	  [ $$rc -eq 0 ] || exit $$rc; \
	  if [ -x "$(JAVA25_HOME)/bin/java" ]; then \
	    JAVA_HOME="$(JAVA25_HOME)" mvn -B -o verify -Dtest=VirtualThreadsTest -Dsurefire.failIfNoSpecifiedTests=false || exit $$?; \
	  else echo "java-test: the virtual-thread test left out: no Java 25 at $(JAVA25_HOME) (set JAVA25_HOME)"; fi; \
	  echo "java-test: $$(( $$(date +%s) - start )) s"

# Installs what the monitoring tests run for real when missing: Debian's redis_exporter (1.45) and
# promtool (package prometheus), and tmux (the terminal tests of `dlock top` and the waiting line);
# curl, which docs/monitoring.md's example scrapes the exporter with.
monitoring-deps:
	@missing=""; \
	command -v prometheus-redis-exporter >/dev/null 2>&1 || missing="$$missing prometheus-redis-exporter"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# monitoring/: the collect script through the real exporter, the alert rules (promtool check and
# test), the dashboard's queries against a real scrape, `dlock top` and the waiting line in tmux.
# In the Python venv (its redis-py and pytest); ruff as for the client. ~30 s.
monitoring-test: build python-venv monitoring-deps
	python/.venv/bin/ruff check --config python/pyproject.toml monitoring/tests
	python/.venv/bin/ruff format --check --config python/pyproject.toml monitoring/tests
	python/.venv/bin/python -m pytest -q -p timeout --timeout 120 monitoring/tests

# Every code example of README.md, docs/ and the packages' READMEs run as shown (tests/docs; how
# each is marked: tests/docs/examples.py), against servers on free ports; and the packages
# installed from a clean clone of this repository (a git clone, plus uncommitted changes to
# tracked files) as README.md says: the CLI by cargo install, Python by pip, Node by npm, the
# Rust crate in a new crate. In the Python venv; needs Node 20+, PyPI and the npm registry. ~4 min.
.PHONY: docs-test
docs-test: build python-venv node-deps node/node_modules/.installed monitoring-deps
	python/.venv/bin/ruff check --config python/pyproject.toml tests/docs
	python/.venv/bin/ruff format --check --config python/pyproject.toml tests/docs
	python/.venv/bin/mypy --strict tests/docs
	python/.venv/bin/python -m pytest -q -p timeout --timeout 600 --durations=12 tests/docs

# What make dist and make dist-test need, installed from Debian when missing: dpkg-dev
# (dpkg-shlibdeps), lintian, binutils (objdump, strip), debootstrap.
dist-deps:
	@missing=""; \
	command -v dpkg-shlibdeps >/dev/null 2>&1 || missing="$$missing dpkg-dev"; \
	command -v lintian >/dev/null 2>&1 || missing="$$missing lintian"; \
	command -v objdump >/dev/null 2>&1 || missing="$$missing binutils"; \
	command -v debootstrap >/dev/null 2>&1 || missing="$$missing debootstrap"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The release artifacts into dist/ (wiped first; docs/install.md lists them, docs/releasing.md
# says how to cut a release): cargo build --release, the module's and the CLI's tarballs and
# Debian packages (lintian must pass), the clients' packages (scripts/dist-clients.sh), then
# dist/SHA256SUMS. Each step timed.
dist: deps dist-deps
	bash scripts/dist.sh

# Installs dist/ on a clean Debian 13 root (debootstrap, cached in .dist-test/) as docs/install.md
# tells a user: redis-server and the module's .deb enabled and started, a lock by redis-cli, the
# CLI's .deb and dlock run, the README's Python and Node examples from the wheel and the npm
# tarball, the Go and Java checks on the host (scripts/dist-check-clients.sh), then CONFIG REWRITE,
# remove, purge, reinstall, and the tarballs. Root only; Redis on 6379 (DIST_TEST_PORT=N else);
# DIST_TEST_PARTIAL=1 passes without the client artifacts. Run before a release, not in make test.
dist-test: dist-deps
	bash scripts/dist-test.sh

# Model-checks the protocol (docs/protocol.md): bounded, about three minutes on two cores.
# The binaries `make build` made are run as they are: `cargo run -p` would resolve one package's
# features alone and compile the client and its dependencies a second time (minutes in CI).
model: build
	target/release/dlock-model

# make test's share of it: every run, property and mutant at lower bounds, about a minute.
model-ci: build
	target/release/dlock-model --ci

# Larger bounds: about fifteen minutes on two cores.
model-deep: build
	target/release/dlock-model --deep

# The integration tests (Rust, and the Python client's slot-migration tests) against other server
# builds: DLOCK_REDIS_SERVERS="path/redis-server ...", else those `make compat-servers` built and
# listed in .compat/servers (Redis 7.4, 8.0, 8.6, Valkey 8.1, 9.1), else the redis-server on the PATH.
compat: build python-venv
	bash scripts/compat.sh

compat-servers:
	bash scripts/compat-servers.sh

# Old masters (0.2, 0.3, 0.4, built into .compat/old/ when missing) replicating to today's module, then failover.
compat-upgrade: build
	bash scripts/compat-upgrade.sh

# The slot-migration paths (waiters redirected, both trim methods) under valgrind memcheck on the
# newest servers `make compat-servers` built, ~2 min.
memcheck: build
	bash scripts/memcheck-slot-migration.sh

chaos-quick: build
	target/release/dlock-chaos --quick

# Fuzzing, not in CI (docs/safety.md has the last run): the module's pure parsers in-process
# (fuzz/: cargo-fuzz and libFuzzer on nightly Rust, both installed when missing; the committed
# corpus in fuzz/corpus/ seeds each target, new finds go to target/fuzz-corpus/), then generated
# whole commands against a real master and replica (tests/command_fuzz.rs) and the CLI's
# argument fuzz with many more cases. FUZZ_SECS per part (default 120: about 12 minutes).
FUZZ_SECS    ?= 120
FUZZ_TARGETS := guard_args observe_args proclaim_args gate_payload
fuzz: build
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	@set -e; cd fuzz; for t in $(FUZZ_TARGETS); do \
	  mkdir -p ../target/fuzz-corpus/$$t; \
	  echo "== fuzz $$t ($(FUZZ_SECS) s)"; \
	  status=0; cargo +nightly fuzz run $$t ../target/fuzz-corpus/$$t corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECS) -max_len=4096 >../target/fuzz-$$t.log 2>&1 || status=$$?; \
	  grep -E '^(Done|#[0-9]+ +DONE)' ../target/fuzz-$$t.log || true; \
	  [ $$status -eq 0 ] || { tail -40 ../target/fuzz-$$t.log; exit 1; }; \
	done
	DLOCK_FUZZ_SECS=$(FUZZ_SECS) $(CARGO) test --release -p dlock --test integration command_fuzz -- --nocapture
	DLOCK_FUZZ_CASES=$$(( $(FUZZ_SECS) * 100 )) DLOCK_FUZZ_SEED=$$(date +%s) \
	  $(CARGO) test --release -p dlock-cli --test fuzz_args -- --nocapture

chaos: build
	target/release/dlock-chaos

# Jepsen's method (docs/safety/partitions.md): nodes and clients in network namespaces
# on a bridge, real partitions and process faults, the history checked. Root only (namespaces,
# nftables, iptables' NFQUEUE for delay where the kernel has no netem); installs iproute2,
# nftables, iptables and the chart's font when missing. `make test` runs
# partitions-ci (a ~2 minute subset: each topology and client once, and runs the checker must
# find invalid); partitions-quick every run on a short schedule, partitions every run (<= 15
# min). Reports and charts in target/partitions/.
partitions-deps:
	@missing=""; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v nft >/dev/null 2>&1 || missing="$$missing nftables"; \
	command -v iptables >/dev/null 2>&1 || missing="$$missing iptables"; \
	[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing="$$missing fonts-dejavu-core"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# A run past its limit is killed; `clean` then removes what it left (namespaces, processes).
# The namespaces' names are the host's: two suites at once (two clones, a test beside a run)
# would remove each other's, so each step holds one host-wide lock. `cargo test -p
# dlock-partitions` also builds the suite's binary (its tests need it), with the features it is
# tested with: a separate `cargo build` of it (or with the CLI, which `build` made) would compile
# it and its dependencies twice. The CLI worker runs target/release/dlock.
PARTITIONS_LOCK ?= /tmp/dlock-partitions.lock
# The Python worker runs with python/.venv (python-venv), the CLI worker with target/release/dlock.
partitions-quick: build partitions-deps python-venv
	flock $(PARTITIONS_LOCK) timeout 600 $(CARGO) test --release -p dlock-partitions
	flock $(PARTITIONS_LOCK) sh -c 'timeout 600 target/release/dlock-partitions --quick; rc=$$?; \
	  target/release/dlock-partitions clean; exit $$rc'

PARTITIONS_CI ?= redlock-partitions,sentinel-ack-off,cluster-ack-on,redlock-mixed-clients,redlock-election,semaphore-broken
partitions-ci: build partitions-deps python-venv
	flock $(PARTITIONS_LOCK) timeout 600 $(CARGO) test --release -p dlock-partitions
	flock $(PARTITIONS_LOCK) sh -c 'timeout 400 target/release/dlock-partitions --quick --only $(PARTITIONS_CI); \
	  rc=$$?; target/release/dlock-partitions clean; exit $$rc'

partitions: build partitions-deps python-venv
	flock $(PARTITIONS_LOCK) timeout 600 $(CARGO) test --release -p dlock-partitions
	flock $(PARTITIONS_LOCK) sh -c 'timeout 1200 target/release/dlock-partitions; rc=$$?; \
	  target/release/dlock-partitions clean; exit $$rc'

# Memory per waiting client against BLPOP's (docs: README, Waiting for a lock), ~1 min.
bench-waiters: build
	ulimit -n 8192 && python3 bench/waiter_memory.py $(MODULE) 2000

# How late after a crashed holder's deadline a waiter gets the lock, ~1 min.
bench-handoff: build
	python3 bench/handoff_latency.py $(MODULE) 500

# How long one `dlock top` call blocks a node: one held lock among 100k keys (docs/bench/top.md), ~20 s.
bench-top: build
	python3 bench/top_latency.py $(MODULE) target/release/dlock 100000 20

# Growth curves (docs/bench/scale.md, issue 24): acquire+release latency and bytes per lock at 10^3..10^6
# live locks next to SET NX PX, handoff latency and memory per waiter at 1..10,000 waiters (one
# resource, and spread over 1000), the event-loop stall while 10^5 locks expire in the same
# millisecond next to SET PXAT keys; (d) server time per command on one resource of 1..10,000
# holders and the stall while 2,000 leases end with 2,000 waiters (docs/bench/holders.md).
# Standard-library Python (bench/scale*.py); up to ~11,000
# connections, so the open-file limit is raised. Tables: stdout and docs/bench/scale.md; charts
# docs/bench/scale-*.png (matplotlib in bench/.venv, skipped with a notice without PyPI).
# Not part of `make test`: about 10 minutes on two cores.
bench-scale: build
	ulimit -n 20000 2>/dev/null || ulimit -n $$(ulimit -Hn); python3 bench/scale.py $(MODULE)
	bash bench/scale_charts.sh

# Instructions and simulated cache misses per DLOCK.ACQUIRE against SET NX PX, with and without
# the module (callgrind --cache-sim; docs/bench/instructions.md), then instructions per write on a
# resource of 100 and of 10,000 holders (docs/bench/holders.md). Needs valgrind; ~3 min.
bench-instructions: build
	bash bench/acquire_instructions.sh $(MODULE)
	cd bench && python3 holder_instructions.py ../$(MODULE)

# Two builds side by side in one run (callgrind): make bench-instructions-ab OLD=/path/old.so
# (build OLD from a worktree of the commit before a change); the last run's figures go in
# docs/bench/instructions.md.
bench-instructions-ab: build
	bash bench/instructions_ab.sh $(OLD) $(MODULE) $(or $(ROUNDS),2)

bench-server: build
	$(CARGO) run --release -q -p dlock-bench --bin bench-server

# Shared locks and semaphores: grant cost vs SET NX PX, a writer's release to 16 queued readers
# (part of `make bench`; about a minute).
bench-shared: build
	$(CARGO) run --release -q -p dlock-bench --bin bench-shared

# Acquire+release cycles per second and per server CPU-second at saturation, dlock vs SET NX PX +
# compare-and-delete and Redisson's scripts, one server (docs/bench/capacity.md; about 70 s).
bench-capacity: build
	$(CARGO) run --release -q -p dlock-bench --bin bench-capacity

# One lock, 32 waiters, 0 ms holds: handoffs/s and server commands per handoff, dlock's queue vs
# BLPOP, pub/sub and polling wake-ups, on 1 and 5 nodes, next to one PING round trip (about 90 s).
bench-handoff-limit: build
	$(CARGO) run --release -q -p dlock-bench --bin bench-handoff-limit

# Several resources at once against the peers (docs/bench/multi.md): dining philosophers, dlock's
# sets and sorted single locks against Redisson's MultiLock, node-redlock's array form and redsync
# per key, on 1 node, 5 masters and a 3+3 Cluster; the server cost of a 5-key grant; PING during
# 16-key set churn. BENCH_MULTI_SECS per run (default 60: ~30 min; 10: ~6 min);
# BENCH_MULTI_ONLY=word,... keeps the rows whose label has a word ("cluster", "redsync", "cost").
bench-multi: build go-deps
	bash bench/multi.sh

# What loading the module costs traffic that never touches a lock (docs/bench/tax.md): the
# same server with the module and one lock against it without, on Redis 7.0 (the PATH's) and the
# newest Redis and Valkey `make compat-servers` built. Needs valgrind; ~15 min per server.
# What a node holding a gate pays on other keys' EXPIRE and DEL (it listens to generic keyspace
# events once it stored a gate): bench/gate_tax.sh, ~30 s; docs/bench/gate-tax.md.
bench-gate-tax: build
	bash bench/gate_tax.sh

bench-tax: build
	cd bench && python3 tax.py ../$(MODULE) $$(command -v redis-server) $$(grep -E 'redis-8|valkey-9' ../.compat/servers 2>/dev/null | sort -V | tail -n 2)

# Leader election, dlock (1 and 5 masters) against etcd's election (Debian's etcd-server, installed
# when missing): failover after a SIGKILLed leader, observers' delay, a paused leader's writes
# through the gate vs after a check (docs/bench/elect.md; ~5 min).
bench-elect: build
	@command -v etcd >/dev/null 2>&1 || { \
	  echo "installing: etcd-server etcd-client"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server etcd-client >/dev/null; }
	cd bench && python3 elect.py ../$(MODULE) ../target/release/dlock 30

bench: build go-deps
	bash bench/run.sh

bench-quick: build go-deps
	bash bench/run.sh --quick

# The Java rows alone (docs/bench/java.md): dlock's Java client (java/, installed into ~/.m2 by
# `mvn -o install`) against Redisson 3.52.0's RLock, fair lock and RFencedLock (on one of the five
# masters), beside the Rust client's rows for the ratios; Java 17 and Maven, offline after the
# first resolve. 3 rounds of 3 s per subject per scenario, ~13 min (the JVMs warmed first: bench/java Scenarios.warm); nothing written.
bench-java: build
	bash bench/run.sh --java

# Five local masters with the module on ports 7001-7005 (foreground, Ctrl-C stops); other ports:
# make cluster CLUSTER_PORTS="8001 8002 8003 8004 8005".
CLUSTER_PORTS ?= 7001 7002 7003 7004 7005
cluster: build
	CLUSTER_PORTS="$(CLUSTER_PORTS)" bash client/scripts/cluster.sh

# A local Redis Cluster (3 masters + 3 replicas on 7101-7106, or REDIS_CLUSTER_PORTS) for
# redis+cluster:// node URLs.
REDIS_CLUSTER_PORTS ?= 7101 7102 7103 7104 7105 7106
redis-cluster: build
	REDIS_CLUSTER_PORTS="$(REDIS_CLUSTER_PORTS)" bash client/scripts/redis-cluster.sh

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
