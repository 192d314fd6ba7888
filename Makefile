# The two README commands: `make demo` and `make check`.  Each installs
# missing Debian build dependencies (scripts/deps.sh), configures and builds.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
MESON_FLAGS ?=

.PHONY: all deps build demo check unit integration bench clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_FLAGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

check: build
	@scripts/check.sh $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)

bench: build
	@bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
