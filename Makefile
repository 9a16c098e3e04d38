# Build and test targets (as nginx-acme's Makefile). The scripts they call stay usable alone:
# scripts/run.sh and scripts/test.sh are the README's two commands.
#   make build BUILD=release|debug|addon|static     `make help` lists every target.
BUILD ?= release
export NGX_CONFIGURE_ARGS ?= --with-debug

.DEFAULT_GOAL := help
.PHONY: help build run check unit test full-test system package addon static nginx-suite \
	fuzz smoke bench clean

help: ## this list
	@echo "make TARGET [BUILD=release|debug|addon|static]"
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/  \1\t\2/p' $(MAKEFILE_LIST) | expand -t 16

build: ## the module (BUILD=release|debug: the .so for the vendored NGINX 1.28; addon: NGINX's --add-dynamic-module; static: NGINX with the module linked in)
ifeq ($(BUILD),addon)
	scripts/build-addon.sh
else ifeq ($(BUILD),static)
	scripts/build-addon.sh --static
else ifneq ($(filter $(BUILD),release debug),)
	PROFILE=$(BUILD) scripts/build.sh
else
	$(error BUILD=$(BUILD): expected release, debug, addon or static)
endif

run: ## NGINX with the module on the NGF example, a few requests (scripts/run.sh)
	scripts/run.sh

check: ## format and clippy
	cargo fmt --all -- --check
	scripts/ci-cargo.sh clippy --all-targets -- -D warnings

unit: ## the engine and generator tests (no NGINX), `ci` profile
	cargo test --profile ci

test: ## everything on the vendored NGINX 1.28: format, clippy, unit, end-to-end, harness (scripts/test.sh)
	scripts/test.sh

full-test: ## what CI runs: test, package, addon, static, nginx-suite (.ci/run)
	.ci/run

system: ## the end-to-end tests on Debian's NGINX 1.22 (scripts/test.sh --system)
	scripts/test.sh --system

package: ## the Debian packages, installed, tested, purged (scripts/test.sh --package)
	scripts/test.sh --package

addon: ## the addon build's tests (scripts/test.sh --addon)
	scripts/test.sh --addon

static: ## NGINX with the module linked in, harness tests (scripts/test.sh --static)
	scripts/test.sh --static

nginx-suite: ## NGINX's own test suite without and with the module (scripts/test.sh --nginx-suite)
	scripts/test.sh --nginx-suite

fuzz: ## libFuzzer, 60 s per target (scripts/fuzz.sh)
	scripts/fuzz.sh

smoke: ## every measurement script of scripts/bench/ at tiny sizes (seconds each)
	scripts/bench/smoke.sh

bench: ## the benchmarks: module vs native vs njs, writes docs/BENCHMARKS.md (scripts/bench/bench.sh)
	scripts/bench/bench.sh

clean: ## cargo clean (target/)
	cargo clean
