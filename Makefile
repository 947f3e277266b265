# Thin wrapper over CMake + CTest. Every target installs missing Debian
# packages first (scripts/deps.sh is idempotent and quick when all present).
#   make              build into build/ (binaries: build/xpool, build/xpoold)
#   make run          the main job: xpool dev, a controller with emulated nodes
#   make run-sim      the OpenB / FGD reproduction beside the published results
#   make test         the whole test suite; SANITIZE=1 for address+undefined,
#                     TSAN=1 the threaded tests under ThreadSanitizer
#   make bench        benchmark figures (medians of several runs)
#   make install      binaries, systemd units, /etc/xpool configs (PREFIX,
#                     default /usr/local; DESTDIR stages; docs/deploy.md)
#   make fuzz         every parser harness under libFuzzer, FUZZ_SECONDS each
#                     (default 60; clang, build-fuzz/; docs/design/fuzzing.md)

SANITIZE ?= 0
TSAN ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build-asan
CMAKE_FLAGS += -DXP_SANITIZE=ON
else ifeq ($(TSAN),1)
BUILD ?= build-tsan
CMAKE_FLAGS += -DXP_TSAN=ON
CTEST_FLAGS += -L threaded
else
BUILD ?= build
endif
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
OPENB ?= ../shared/traces/openb
FUZZ_SECONDS ?= 60

PREFIX ?= /usr/local

.PHONY: all deps build run run-sim test bench fuzz clean install

all: build

deps:
	@./scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# make run: the build's output goes to $(BUILD)/build.log (shown only when it
# fails), so the last lines on the terminal are dev's address, token and
# dashboard
run:
	@./scripts/deps.sh >/dev/null
	@mkdir -p $(BUILD)
	@echo "building into $(BUILD)/ (log: $(BUILD)/build.log)"
	@{ cmake -S . -B $(BUILD) $(CMAKE_FLAGS) && cmake --build $(BUILD) -j $(JOBS); } \
		>$(BUILD)/build.log 2>&1 || { tail -40 $(BUILD)/build.log; exit 1; }
	./scripts/run.sh $(BUILD)

run-sim: build
	./scripts/run-sim.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

bench: build
	./bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# its own build folder (clang, libFuzzer): the harnesses only
fuzz:
	@./scripts/deps.sh fuzz
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) ./scripts/fuzz.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz
