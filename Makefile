# Quick start: `make demo` and `make test` each set everything up on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
# The package caches its own kernels in one folder per hash of its sources (pymc_treesamplers/kernel_cache.py),
# under NUMBA_CACHE_DIR if set, else the user's cache folder: so `make demo` warms the cache a user's own Python
# reads. The tests write kernels of their own, which numba alone would cache beside them and not recompile after an
# edit to a package kernel they call; the test targets therefore run under a cache directory per hash of the
# package and of the test files that hold kernels (editing any other test recompiles nothing)
TEST_CACHE := $(CURDIR)/.numba-cache/$(shell cat $$( (find pymc_treesamplers -name '*.py'; grep -rl --include='*.py' njit tests) | sort) | sha1sum | cut -c1-12)

.PHONY: demo test check docs lint bench bench-quick bench-render bench-speed bench-likelihoods bench-glm bench-defaults bench-defaults-scale \
	bench-routes bench-graph-route bench-scale-readme bench-threads bench-threads-env bench-smctree bench-verify-raw bench-coldstart \
	bench-causal bench-varying bench-lines bench-monotone bench-bambi bench-variance bench-smctree-quick bench-mixing bench-mixing-quick bench-sparsity bench-sparsity-quick \
	bench-california-shipped bench-scale bench-scale-quick clean

$(STAMP): pyproject.toml
	@set -e; if [ ! -x $(PY) ]; then \
		BOOT=$$(scripts/find_python.sh); echo "creating $(VENV) with $$BOOT"; \
		"$$BOOT" -m venv $(VENV); fi
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	rm -f $(VENV)/.installed-*; touch $@

# the set-up compiles every sampler's kernels into the package's cache, the one a user's own Python reads
demo: $(STAMP)
	$(PY) -m pymc_treesamplers.compile
	$(PY) -m examples.demo

# both cores, tests handed out one at a time to whichever worker is free (worksteal: one file per
# worker left a core idle while the other ran the long statistical files; compiled kernels are shared
# through numba's on-disk cache); then the checked pass: the kernels compiled once more, with bounds checks
# and blocks of 2 rows (PMT_ROWS_BLOCK=2: the long-range row paths then run on the 7-row enumeration data),
# into a cache of their own (numba's cache key includes neither), and the tests marked boundscheck rerun,
# which reach every kernel and every sampler's enumeration tests
test: $(STAMP)
	NUMBA_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -q -n 2 --dist worksteal --durations=20
	PMT_ROWS_BLOCK=2 NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$(TEST_CACHE)-checked $(PY) -m pytest -q -n 2 \
		--dist worksteal -m boundscheck

# the contributor's loop: lint, then every test not marked slow (about 4 minutes on a warm 2-core machine);
# the statistical tests marked slow run in `make test` and CI
check: $(STAMP)
	$(PY) -m ruff check pymc_treesamplers tests benchmarks scripts
	NUMBA_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -q -n 2 --dist worksteal -m "not slow"

# the documentation site (MkDocs, strict: a warning fails the build) into build/site
$(VENV)/.docs-installed: $(STAMP)
	$(PY) -m pip install -q -e ".[test,docs]"
	touch $@

docs: $(VENV)/.docs-installed
	$(PY) scripts/docs_source.py
	$(PY) -m mkdocs build

lint: $(STAMP)
	$(PY) -m ruff check pymc_treesamplers tests benchmarks scripts

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $@

bench: $(VENV)/.bench-installed
	$(PY) -m benchmarks.friedman --out docs/reports/benchmarks.md

bench-quick: $(VENV)/.bench-installed
	$(PY) -m benchmarks.friedman --quick --out docs/reports/benchmarks-quick.md

# Every bench target that samples measures and writes its report only from a clean tree (no local changes to
# pymc_treesamplers/, benchmarks/ outside results/, pyproject.toml; see `git status`); BENCH_ALLOW_DIRTY=1
# writes it anyway, its git state marked -dirty. Draws and traces go to ignored benchmarks/results/**/raw/.

# rebuild every benchmark report in docs/ from its saved JSON (no sampling, so a dirty tree is fine)
bench-render: $(STAMP)
	$(PY) -m benchmarks.harness

# check the raw draws and traces kept outside git against the sha256 their saved JSON records (a missing one:
# the command that regenerates it)
bench-verify-raw: $(STAMP)
	$(PY) -m benchmarks.harness --verify-raw

# this checkout against another one: make bench-speed BEFORE=/path/to/old/checkout [REPEATS=3]
bench-speed: $(VENV)/.bench-installed
	@test -n "$(BEFORE)" || { echo "usage: make bench-speed BEFORE=/path/to/old/checkout [REPEATS=3]"; exit 2; }
	$(PY) -m benchmarks.speed --src before=$(BEFORE) --src after=$(CURDIR) --repeats $(or $(REPEATS),3)

# non-Gaussian BART held out against pymc-bart, stochtree and scikit-learn (six binary data sets, three count
# data sets, a heteroskedastic simulation; about two hours)
bench-glm: $(VENV)/.bench-installed
	$(PY) -m benchmarks.glm

# how the non-Gaussian defaults (the leaf prior scale per link, trees, split points) were chosen, on tuning
# data sets only (about an hour)
bench-defaults: $(VENV)/.bench-installed
	$(PY) -m benchmarks.defaults

# the log-sd leaf prior of a variance forest, chosen on tuning data sets (engel, bwages; about 15 minutes)
bench-defaults-scale: $(VENV)/.bench-installed
	$(PY) -m benchmarks.defaults --cases scale --json benchmarks/results/defaults-scale.json --out docs/reports/defaults-scale.md

# the likelihood routes (augmentation, log-link leaves, centred expansion) against each other on real data:
# acceptance, ESS/s of f, held-out score (about 15 minutes)
bench-routes: $(VENV)/.bench-installed
	$(PY) -m benchmarks.routes

# likelihoods outside the families (softmax, ordinal, ZIP, censored, Beta, Weibull) on the graph route, lowered
# and through Python, against pymc-bart: wall time and ESS per second (about 15 minutes)
bench-graph-route: $(VENV)/.bench-installed
	$(PY) -m benchmarks.graph_route

# single-tree SMC (SMCTreeClassifier/Regressor) against single-tree CGM, CART and a random forest, held out
# (ionosphere, Boston; the top-down SMC paper's section 4); the quick one is a smoke run of a few minutes
bench-smctree: $(VENV)/.bench-installed
	$(PY) -m benchmarks.smctree

bench-smctree-quick: $(VENV)/.bench-installed
	$(PY) -m benchmarks.smctree --quick

# do independent chains agree? every sampler on hypercube-D (paper prior, 4 chains, D = 3, 4, 5, 7), then
# ReshapeStep vs CGM, pymc-bart and stochtree on Friedman #1, California and Boston (issue 15)
bench-mixing: $(VENV)/.bench-installed
	$(PY) -m benchmarks.hypercube --dims 3,4,5,7 --samplers growprune,cgm,ct,pg,pg-opt,pg-pimh,reshape \
		--seeds 1,2,3,4 --split-points range --out docs/reports/hypercube-mixing.md --json benchmarks/results/hypercube-mixing.json
	$(PY) -m benchmarks.mixing
	$(PY) -m benchmarks.mechanisms
	$(PY) -m benchmarks.mechanisms --arms twigs --out docs/reports/twigs.md --json benchmarks/results/twigs.json
	$(PY) -m benchmarks.mechanisms --arms twigs,sigma-every --seed 144 --cases boston,california \
		--out docs/reports/twigs-replicate.md --json benchmarks/results/twigs-replicate.json
	$(PY) -m benchmarks.mechanisms --arms sigma-every --out docs/reports/sigma-every.md \
		--json benchmarks/results/sigma-every.json
	$(PY) -m benchmarks.sigma_ridge

bench-mixing-quick: $(VENV)/.bench-installed
	$(PY) -m benchmarks.mixing --quick

# the Dirichlet split prior (DART) vs uniform weights, pymc-bart and stochtree on Friedman #1 with 10, 100 and
# 1000 covariates (issue 16)
bench-sparsity: $(VENV)/.bench-installed
	$(PY) -m benchmarks.sparsity

bench-sparsity-quick: $(VENV)/.bench-installed
	$(PY) -m benchmarks.sparsity --quick

# California housing as shipped (missing values, a string column) against the hand-preprocessed table,
# pymc-bart and stochtree (issue 16)
bench-california-shipped: $(VENV)/.bench-installed
	$(PY) -m benchmarks.california_shipped

# seconds per sweep and peak memory at 10^4..10^7 rows, 1 and 2 threads, against stochtree and pymc-bart
# (issue 17; about an hour, most of it at 10^7 rows); the quick one is 10^4 and 10^5 rows only
bench-scale: $(VENV)/.bench-installed
	$(PY) -m benchmarks.scale

bench-scale-quick: $(VENV)/.bench-installed
	$(PY) -m benchmarks.scale --quick

# the README's model (sigma ~ HalfNormal, pm.sample's own step assignment) at 10^6 rows against stochtree and
# GrowPrune, one thread (issue 27; about 15 minutes)
bench-scale-readme: $(VENV)/.bench-installed
	$(PY) -m benchmarks.scale --sizes 1e6 --arms readme-1,pmt-1,stochtree-1 --out docs/reports/scale-readme.md

# the README's model at 10^6 rows, each tree step on 1 and 2 threads (issue 45; about 15 minutes)
bench-threads: $(VENV)/.bench-installed
	$(PY) -m benchmarks.scale --sizes 1e6 --arms readme-cgm-1,readme-cgm-2,readme-growprune-1,readme-growprune-2,readme-reshape-1,readme-reshape-2,readme-pg-1,readme-pg-2 --out docs/reports/threads.md

# CGMStep(threads=1 and 2) on the README's model at 10^4-10^6 rows under the thread variables users set (issue
# 60; about 15 minutes)
bench-threads-env: $(VENV)/.bench-installed
	$(PY) -m benchmarks.scale --sizes 1e4,1e5,1e6 --arms readme-cgm-1,readme-cgm-2 --thread-env pinned,none,numba-omp,others-1 --out docs/reports/threads-env.md

# a first fit (import, first pm.sample, first prediction) with empty and with warm caches, each sampler and
# pymc-bart (about 10 minutes)
bench-coldstart: $(VENV)/.bench-installed
	$(PY) -m benchmarks.coldstart

# causal forests by composition (leaf_basis, Hahn et al.'s effect prior and the defaults) against stochtree's BCFModel,
# Hahn et al.'s design (about 40 minutes)
bench-causal: $(VENV)/.bench-installed
	$(PY) -m benchmarks.causal

# varying coefficients (leaf_basis) against constant leaves and stochtree's leaf_basis, held out (about 5 minutes)
bench-varying: $(VENV)/.bench-installed
	$(PY) -m benchmarks.varying

# lines in the leaves (response="linear", "mix") against constant leaves and pymc-bart's linear leaves, held out on
# five public data sets and two simulations (about 25 minutes)
bench-lines: $(VENV)/.bench-installed
	$(PY) -m benchmarks.lines

# monotone constraints held out against the same model without them and LightGBM's monotone_constraints (two
# simulations, Boston), and the cost of a constrained CGM and GrowPrune sweep at n = 10^4, m = 200 (about 5 minutes)
bench-monotone: $(VENV)/.bench-installed
	$(PY) -m benchmarks.monotone

# a forest in a bambi formula against bambi's linear model and BART alone, held out (about 10 minutes)
bench-bambi: $(VENV)/.bench-installed
	$(PY) -m benchmarks.bambi_heldout

# variance forests (a log-sd BART) against stochtree's heteroskedastic BART: mcycle and a simulation (about 5 minutes)
bench-variance: $(VENV)/.bench-installed
	$(PY) -m benchmarks.variance

# non-Gaussian sweeps vs the Gaussian one, and the noise-scale step vs NUTS (Friedman #1, n = 10,000, m = 200)
bench-likelihoods: $(VENV)/.bench-installed
	$(PY) -m benchmarks.likelihood_cost

clean:
	rm -rf $(VENV) demo_output .pytest_cache build
