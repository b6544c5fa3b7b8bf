# zfuse build and test targets. Every target is a plain go command.
GO ?= go

.PHONY: all build deps check test unit integration fuzz soak bench bench-mount bench-c bench-compress kernels gpu

all: build

# build: the zfuse binary in ./bin, and beside it zfuse-csi, the CSI plugin
# zfuse csi runs (apart, so that no mount maps its gRPC code). -buildvcs=true: stamp the git revision,
# its time and whether the tree was modified (zfuse version prints them)
# even where GOFLAGS says -buildvcs=false; the go command cannot stamp a
# git worktree (its .git is a file), and says nothing then.
build:
	$(GO) build -buildvcs=true -o bin/ ./cmd/zfuse ./cmd/zfuse-csi

# ZARRITA: where deps installs zarrita (npm), the independent Zarr v3
# implementation the v3 tests write and read fixtures with; the tests look
# in $ZFUSE_ZARRITA, else in the user cache directory, as here.
ZARRITA ?= $(or $(ZFUSE_ZARRITA),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/zfuse/zarrita-0.7.5)

# deps: the Debian packages the tests need (run as root on Debian 12):
# fuse3 for fusermount3, zarr-python 2.13 / numcodecs 0.11 to write fixture
# stores and read through mounts, xarray to open mounts as datasets (with
# dask, as xarray users compute: zfuse bench's dask reader too), fsspec
# and aiohttp for zarr-python over HTTP (zfuse bench's zarr-http reader), PyYAML
# to parse the Kubernetes examples of docs/ (integration/compress_scale_test.go).
# The remote-store tests serve stores from 127.0.0.1: nginx-light for HTTP
# (byte ranges), versitygw (an S3 gateway over a directory) for S3; go install
# puts it in $(go env GOPATH)/bin, where the tests look (or $ZFUSE_VERSITYGW).
# Node.js 20 with npm (the machine's; Debian 12's nodejs where there is none)
# and zarrita@0.7.5 from npm into $(ZARRITA), unless it is there already.
# The reader tests (integration/readers_test.go) read mounts with netCDF-C
# (netcdf-bin's ncdump, python3-netcdf4), GDAL (gdal-bin's gdal_translate,
# python3-gdal) and a PyTorch DataLoader (python3-torch). The netCDF view's
# tests (integration/nc_test.go) read its files with CDO (cdo), NCO's ncks
# (nco), xarray's scipy engine (python3-scipy) and a C program built
# against netCDF-C (gcc, libnetcdf-dev); netcdf-bin's ncgen writes the
# files netcdf/'s header tests compare with.
deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		fuse3 python3-zarr python3-numcodecs python3-numpy python3-xarray python3-dask python3-fsspec python3-aiohttp python3-yaml
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		netcdf-bin python3-netcdf4 gdal-bin python3-gdal python3-torch
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		cdo nco python3-scipy gcc libnetcdf-dev
	$(GO) mod download
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light
	$(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0
	command -v node >/dev/null && command -v npm >/dev/null || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
	test "$$(node -p 'require("$(ZARRITA)/node_modules/zarrita/package.json").version' 2>/dev/null)" = 0.7.5 || \
		npm install --prefix "$(ZARRITA)" --no-audit --no-fund zarrita@0.7.5
	# FUSE over io_uring (Linux 6.14+), zfuse's faster transport: the
	# kernel offers it once root enables it; the transport tests need it.
	# Kernels without it (Debian 12's 6.1) have no such file.
	if [ -w /sys/module/fuse/parameters/enable_uring ]; then echo Y > /sys/module/fuse/parameters/enable_uring; fi

# check: formatting, vet, and the import table (deps_test.go), which the
# README's package table must agree with.
check:
	test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...
	$(GO) test -run 'TestImports|TestReadmeTable' .

# test: everything CI runs. -race: many readers at once must be safe;
# -count=1: integration tests mount for real, never use cached results.
# A test whose requirement this machine lacks (FUSE, root, Python with
# zarr, zarrita, nginx, versitygw, ../shared) skips; with
# ZFUSE_TEST_REQUIRE=deps, as .ci/run sets it, it fails instead
# (internal/testutil.Need).
# The integration tests run on each serving path (zfuse mount --serving):
# the default (no-open), passthrough, and open (the last fallback), set for
# every mount by ZFUSE_SERVING, so that all stay byte-exact; the first two
# on the default transport (FUSE over io_uring where the kernel offers it),
# the last over /dev/fuse (ZFUSE_TRANSPORT=dev), the fallback of both.
# fusemount's own tests mount on every path and both transports. The
# second and third passes skip the tests that do not read through a
# serving path (SERVING_SKIP), which are half the package's time. Each pass
# runs, and reports, even when an earlier one failed (a failure on one path
# says nothing of the others); the last line names the passes that failed,
# and the target fails if any did.
test: check
	failed=; \
	$(GO) test -race -count=1 -timeout 30m ./... || failed="$$failed ./..."; \
	ZFUSE_SERVING=passthrough $(GO) test -race -count=1 -timeout 30m -skip '$(SERVING_SKIP)' ./integration/ || failed="$$failed ZFUSE_SERVING=passthrough"; \
	ZFUSE_SERVING=open ZFUSE_TRANSPORT=dev $(GO) test -race -count=1 -timeout 30m -skip '$(SERVING_SKIP)' ./integration/ || failed="$$failed ZFUSE_SERVING=open,ZFUSE_TRANSPORT=dev"; \
	$(CONFORMANCE_SKIPPED); \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi

# SERVING_SKIP: the integration tests whose outcome no serving path or
# transport changes: compress (it mounts nothing), zfuse bench's smoke
# runs (they pick their own transports), and what a mount does before and
# around serving: starting against slow or failing servers, metadata
# refresh over many arrays, remote latency, the daemon's life (background,
# fstab, signals, exit status, stale and stuck mountpoints, a kill during
# a lookup). About 560 s of the 1,100 s of a pass on the 2-core VM.
SERVING_SKIP = ^(TestCompress.*|TestBench.*|TestMountStartFaults|TestConsolidatedStart|TestLazyStart|TestRefreshBounded|TestRefreshManyArrays|TestHTTPLatency|TestKillWhileLookingUp|TestStuckMountpoint|TestStaleMountAfterRead|TestBackground.*|TestFstab|TestCLIExitStatus|TestSignals)$$

# CONFORMANCE_SKIPPED says, as test's last line, which packages' conformance
# tests skipped for want of the shared data (internal/testutil.SharedDir:
# $ZFUSE_SHARED, else ../shared beside the checkout): they read stores
# and chunks other implementations wrote, which the repository does not
# hold. grep finds the packages whose tests ask for it; silent where the
# data is there.
CONFORMANCE_SKIPPED = test -d "$${ZFUSE_SHARED:-../shared}" || echo "make test: skipped the conformance tests of \
	$$(grep -rl --include='*_test.go' -e 'testutil\.Conformance' -e 'testutil\.Shared' . | xargs -n1 dirname | sed 's|^\./||' | sort -u | paste -sd' ' -): \
	no $${ZFUSE_SHARED:-../shared} (the data other implementations wrote: c-blosc, numcodecs, zarr-python 2.18, zarrita.js)"

# unit: the fast tests only (-short skips mounts and Python fixtures).
unit:
	$(GO) test -race -short ./...

# integration: real mounts, one package at a time (-p 1), and again with
# GOMAXPROCS=1, where scheduling bugs show that hide elsewhere; the second
# pass runs even when the first failed, as in test.
integration:
	failed=; \
	$(GO) test -race -count=1 -p 1 -timeout 20m ./integration/... || failed="$$failed default"; \
	GOMAXPROCS=1 $(GO) test -race -count=1 -p 1 -timeout 20m ./integration/... || failed="$$failed GOMAXPROCS=1"; \
	if [ -n "$$failed" ]; then echo "make integration: failed:$$failed"; exit 1; fi

# fuzz: every fuzz target of the module (the packages whose tests have a
# func FuzzX), each on top of its seed corpus (f.Add, testdata/fuzz/) for
# FUZZTIME: 10000 executions by default; CI runs 500 each
# (.ci/run: make fuzz FUZZTIME=500x; a count, not a duration, see there). -run '^$$': no other tests; -fuzz: one
# target at a time (go test fuzzes one per run). An input that fails is
# written to the package's testdata/fuzz/FuzzX/ and stops the run: fix the
# code, and commit the input as a regression test.
FUZZTIME ?= 10000x
fuzz:
	for p in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$p/*_test.go | cut -d' ' -f2); do \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime=$(FUZZTIME) $$p || exit 1; \
		done; \
	done

# soak: the long run, not in CI: TestSoak for SOAK (10 minutes; any Go
# duration, e.g. make soak SOAK=2h) on a local and an HTTP mount, every
# read compared with the source; it prints reads, bytes, errors and RSS
# over time, and fails on any wrong byte or error. -run: that test only;
# -v: the summary; -count=1: never a cached result; -timeout: the soak's
# own watchdog (SOAK + 3 minutes) ends a hang first.
SOAK ?= 10m
soak:
	ZFUSE_SOAK=$(SOAK) $(GO) test -count=1 -v -run '^TestSoak$$' -timeout 24h ./integration

# bench: decoder and chunk-loader benchmarks, 6 runs each for benchstat.
bench:
	$(GO) test -run '^$$' -bench . -count 6 ./codec ./readahead

# bench-mount: the tables of docs/performance.md. zfuse bench writes a 1 GiB
# float32 array with zarr-python (Blosc-lz4, Zstd, uncompressed; needs
# make deps), mounts each store with zfuse, and compares the mount with
# reading the files directly and with zarr-python. As root it also raises
# the mounts' kernel readahead. --keep --dir DIR keeps the stores, and
# --store DIR reads them again without writing.
bench-mount: build
	bin/zfuse bench

# bench-c: Go vs C (numcodecs) decode speed on the same numcodecs-written bytes.
bench-c:
	/usr/bin/python3 codec/testdata/bench_c.py

# bench-compress: the table of docs/compress.md. zfuse bench compress writes a
# 1 GiB float32 array uncompressed with zarr-python, then in alternating
# rounds times Blosc-lz4 encoding (zfuse's pool against numcodecs 0.11 with
# as many Blosc threads), the Blosc-lz4 and Zstd ratios against c-blosc and
# libzstd, zfuse compress against zarr-python's zarr.copy, and zfuse compress
# in 4 parts at once and into S3 (versitygw, as make deps installs it, on
# 127.0.0.1) against one process into a directory.
bench-compress: build
	bin/zfuse bench compress

# kernels: regenerate the committed PTX from gpu/kernels/*.cu with nvcc
# (Debian 12: nvidia-cuda-toolkit from the non-free component; normal builds
# need no CUDA packages). -ptx: text PTX, which the driver JIT-compiles for
# the GPU at hand; -arch=compute_80: PTX for Ampere and newer (H100/H200 are
# sm_90). SOURCES.sha256 ties the PTX to its sources: TestPTXFresh fails
# when a .cu or .h changed without `make kernels`.
kernels:
	cd gpu/kernels && for k in lz4 shuffle; do nvcc -ptx -arch=compute_80 -o $$k.ptx $$k.cu || exit 1; done
	cd gpu/kernels && sha256sum zfuse.h lz4.cu shuffle.cu lz4.ptx shuffle.ptx > SOURCES.sha256

# gpu: build what gpu/run_on_device.sh runs on a GPU machine: the gpu test
# binary (-c: compile the tests without running them; -o: its path) and
# chunks written by numcodecs (Python is not needed there). The device
# tests skip without a GPU, and fail instead with ZFUSE_TEST_REQUIRE=gpu.
gpu:
	$(GO) test -c -o bin/gpu.test ./gpu
	/usr/bin/python3 gpu/testdata/fixtures.py bin/gpu-fixtures
