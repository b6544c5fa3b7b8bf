#!/usr/bin/env bash
# run_on_device.sh: issue 6's GPU checks in one go, on a machine with an
# NVIDIA GPU (driver >= 520 for the compute_80 PTX; H100/H200 with CUDA 12/13
# drivers are the target). Nothing is compiled there.
#
# On the build machine, from the repository root (no GPU needed):
#     make gpu     # bin/gpu.test (go test -c ./gpu) and bin/gpu-fixtures/ (numcodecs chunks)
# On the GPU machine, from a copy of the repository root holding bin/:
#     bash gpu/run_on_device.sh [test|bench|all] [OUTDIR]
# (with the device tool: carry ["bin/gpu.test", "bin/gpu-fixtures", "bin/shared"], and
# OUTDIR defaulting to $OUT, so the logs come back.)
#
#   test   TestDevice* (GPU == CPU byte for byte on conformance, numcodecs,
#          random and corrupt chunks; 256 MiB batches), TestPTXFresh,
#          TestOpenSystemDriver, TestFakeDriver if g++ is there.  ~1-2 min.
#   bench  BenchmarkGPU (host to host), BenchmarkKernel (one launch per
#          batch, CUDA events), BenchmarkCPUPool (all cores), BenchmarkBreakEven,
#          on 256 MiB batches (ZFUSE_BENCH_MB) of 64 KiB/256 KiB/1 MiB chunks. ~3-5 min.
#
# ZFUSE_TEST_REQUIRE=gpu,deps makes a missing GPU, and missing conformance
# data or tools, a failure instead of a skip.
# The conformance data is found through ZFUSE_SHARED, set below when
# shared/ sits in or beside the repository root or in bin/shared; to carry
# it (3.6 MB) with the device tool, copy it there first (bin/ is ignored):
#     mkdir -p bin/shared/conformance/numcodecs
#     cp -r ../shared/conformance/c-blosc bin/shared/conformance/
#     cp -r ../shared/conformance/numcodecs/fixture bin/shared/conformance/numcodecs/
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-all}
out=${2:-${OUT:-$root/bin/gpu-results}}
mkdir -p "$out"
bin=$root/bin/gpu.test
[ -x "$bin" ] || { echo "no $bin: run 'make gpu' on the build machine first" >&2; exit 2; }

export ZFUSE_TEST_REQUIRE=gpu,deps
if [ -z "${ZFUSE_SHARED:-}" ]; then
	for d in "$root/shared" "$root/../shared" "$root/bin/shared"; do
		[ -d "$d/conformance" ] && export ZFUSE_SHARED=$(cd "$d" && pwd) && break
	done
fi
[ -d "$root/bin/gpu-fixtures" ] && export ZFUSE_GPU_FIXTURES=$root/bin/gpu-fixtures

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
	nproc
	echo "ZFUSE_SHARED=${ZFUSE_SHARED:-unset} ZFUSE_GPU_FIXTURES=${ZFUSE_GPU_FIXTURES:-unset}"
} | tee "$out/machine.txt"

rc=0
cd "$root/gpu" # the tests read kernels/ and testdata/ relative to the package
if [ "$mode" = test ] || [ "$mode" = all ]; then
	"$bin" -test.v -test.count=1 -test.timeout=8m \
		-test.run '^(TestDevice|TestPTXFresh|TestOpenSystemDriver|TestFakeDriver)' 2>&1 | tee "$out/test.txt"
	rc=${PIPESTATUS[0]}
fi
if [ "$mode" = bench ] || [ "$mode" = all ]; then
	"$bin" -test.run '^$' -test.bench "${ZFUSE_BENCH:-.}" -test.benchtime "${ZFUSE_BENCHTIME:-3x}" \
		-test.timeout=9m 2>&1 | tee "$out/bench.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi
echo "exit $rc; logs in $out"
exit $rc
