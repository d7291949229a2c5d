#!/usr/bin/env bash
# Print the CMake options that build llama.cpp for the best instruction set this CPU really
# runs. The native build is off: it turns on AMX wherever the CPU reports it, and machines
# that report AMX without allowing it die with SIGILL at the first matrix product. AVX-512
# (with VNNI, VBMI and BF16) is used only when a small program that executes those
# instructions runs here; otherwise the build is for AVX2. AVX-VNNI (the 256-bit form) is a
# separate extension: AMD's Zen 4 runs AVX-512 VNNI but faults on AVX-VNNI, so it is probed
# on its own.
set -uo pipefail
avx2="-DGGML_NATIVE=OFF"
avx512="-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# Whether a program exits cleanly; a fault is reported by the inner shell, quietly.
runs() { sh -c '"$1" 2>/dev/null' _ "$1" 2>/dev/null; }
cat > "$dir/probe.c" <<'C'
#include <immintrin.h>
int main(void) {
    volatile int seed = 3;
    __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi8(2);
    __m512i dot = _mm512_dpbusd_epi32(a, b, b);          /* VNNI */
    __m512i mix = _mm512_permutexvar_epi8(b, dot);       /* VBMI */
    __m512 f = _mm512_set1_ps((float)seed);
    __m256bh h = _mm512_cvtneps_pbh(f);                  /* BF16 */
    __m256i hi = (__m256i)h;
    return (_mm512_reduce_add_epi32(mix) + _mm256_extract_epi32(hi, 0)) == 7 ? 1 : 0;
}
C
cat > "$dir/avx_vnni.c" <<'C'
#include <immintrin.h>
int main(void) {
    volatile int seed = 3;
    __m256i a = _mm256_set1_epi32(seed), b = _mm256_set1_epi8(2);
    return _mm256_extract_epi32(_mm256_dpbusd_avx_epi32(a, b, b), 0) == 7 ? 1 : 0;
}
C
if cc -O1 -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512vbmi -mavx512bf16 \
      "$dir/probe.c" -o "$dir/probe" 2>/dev/null && runs "$dir/probe"; then
    if cc -O1 -mavxvnni "$dir/avx_vnni.c" -o "$dir/avx_vnni" 2>/dev/null \
            && runs "$dir/avx_vnni"; then
        echo "$avx512 -DGGML_AVX_VNNI=ON"
    else
        echo "$avx512"
    fi
else
    echo "$avx2"
fi
