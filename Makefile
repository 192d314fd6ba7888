# The two README commands: `make demo` and `make check`.  Each installs
# missing Debian build dependencies (scripts/deps.sh), configures and builds.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
MESON_FLAGS ?=

.PHONY: all deps build demo check unit integration bench fuzz image clean

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

# Every libFuzzer target from its corpus, FUZZ_SECONDS each (default 60);
# FUZZ_RUNS, FUZZ_TARGETS, FUZZ_OUT, FUZZ_MERGE: see scripts/fuzz.sh.
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_BUILD)

# warden's own image: an OCI image layout in IMAGE_OUT (default
# build/image) of Debian's essential set, IMAGE_PACKAGES and warden
# installed under /usr, for a pod (scripts/image.sh; docs/images.md,
# "warden's own image").  As root; the Debian part is built once and kept in IMAGE_STATE.
IMAGE_OUT ?= $(BUILD)/image
IMAGE_BUILD ?= build-image
IMAGE_STATE ?= build-image-state
image: build
	@IMAGE_OUT=$(IMAGE_OUT) IMAGE_BUILD=$(IMAGE_BUILD) IMAGE_STATE=$(IMAGE_STATE) \
		scripts/image.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(IMAGE_BUILD) $(IMAGE_STATE)
