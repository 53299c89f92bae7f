// The patterns of gpuaccept-memtest and the arithmetic around them, written once for the GPU's kernels and for the
// host (nvcc and g++ both compile this header: tests/native/test_memtest.cpp runs the same word logic on host
// memory). No CUDA call here.
//
// A pattern is a few sweeps over every tested 64-bit word; a sweep reads each word and compares it with the value
// it must hold (check), writes each word (write), or both, in rising or falling address order. The value a word
// must hold is a base value (a constant, the word's own address, or a counter-based random word) XOR a mask: 0
// for the value itself, all ones for its complement. Nothing is copied for the comparison: the expected value is
// computed again from the word's address and index.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#ifdef __CUDACC__
#define GPUACCEPT_HD __host__ __device__ __forceinline__
#else
#define GPUACCEPT_HD inline
#endif

namespace gpuaccept {
namespace memtest {

constexpr uint64_t kAllOnes = ~0ull;
constexpr uint64_t kWalkingBytes = 0x0101010101010101ull;  // one bit set in every byte
constexpr uint64_t kAllocGranularity = 2ull << 20;          // sizes are whole 2 MiB (the driver's large page)
constexpr uint64_t kMarginPercent = 2;                      // of the GPU's total memory, left free besides --margin-mib
constexpr uint64_t kMinTestBytes = 64ull << 20;             // below this a GPU is refused: too little to test
constexpr int kMaxRecords = 8;                              // bad words recorded per GPU and pattern

// How a pattern's base value of a word is made.
enum class Fill : int {
  zeros,    // 0 (its complement all ones)
  walking,  // kWalkingBytes shifted left by the pass number mod 8: MemTest86's 8-bit walking pattern in every byte
  address,  // the word's own device address
  random,   // word_hash(key of the seed and pass, the word's index among all tested words)
};

// One sweep over every tested word.
struct Sweep {
  const char* key;
  bool down;           // highest address first
  bool check;          // read each word and compare it with base ^ check_xor
  bool write;          // write base ^ write_xor to each word (after its check)
  uint64_t check_xor;  // 0: the base value itself; kAllOnes: its complement
  uint64_t write_xor;
};

constexpr int kMaxSweeps = 3;

// A test case of the registry: a stable snake_case key (the document's and --patterns'), what it does, and its
// sweeps in order.
struct PatternDef {
  const char* key;
  const char* description;
  Fill fill;
  int sweeps;
  Sweep sweep[kMaxSweeps];
};

// MemTest86's moving inversions: fill with p; rising, check p and write ~p; falling, check ~p and write p. Every
// word is checked holding p and holding ~p, and each write happens after its neighbours below (rising) or above
// (falling) were rewritten.
constexpr Sweep kFill{"fill", false, false, true, 0, 0};
constexpr Sweep kUpInvert{"check_then_complement_rising", false, true, true, 0, kAllOnes};
constexpr Sweep kDownRestore{"check_complement_then_restore_falling", true, true, true, kAllOnes, 0};
// Value, then complement: fill with v; check v and write ~v; check ~v.
constexpr Sweep kCheckComplement{"check_complement", false, true, false, kAllOnes, 0};

constexpr PatternDef kPatterns[] = {
    {"moving_inversions_ones_zeros",
     "moving inversions (MemTest86) with all zeros and all ones: fill 0; rising: check 0, write all ones; "
     "falling: check all ones, write 0",
     Fill::zeros, 3, {kFill, kUpInvert, kDownRestore}},
    {"moving_inversions_walking",
     "moving inversions with an 8-bit walking-ones pattern in every byte (0x0101010101010101 shifted left by the "
     "pass number mod 8, so eight passes walk the bit through every position) and its complement",
     Fill::walking, 3, {kFill, kUpInvert, kDownRestore}},
    {"address_in_address",
     "each 64-bit word holds its own device address: write, check and write the complement, check the complement "
     "(catches address lines that alias two words)",
     Fill::address, 3, {kFill, kUpInvert, kCheckComplement}},
    {"random",
     "a counter-based random word per word index (SplitMix64 of a key from --seed and the pass number, so each pass "
     "writes another sequence and verification needs no copy): write, check and write the complement, check the "
     "complement",
     Fill::random, 3, {kFill, kUpInvert, kCheckComplement}},
};
constexpr int kNumPatterns = sizeof kPatterns / sizeof kPatterns[0];

// SplitMix64's output function (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014)
// of the state key + (index + 1) * golden gamma: word number `index` of the stream that starts at `key`. Any word
// is computed from its index alone (counter-based), in the kernels and on the host.
GPUACCEPT_HD uint64_t word_hash(uint64_t key, uint64_t index) {
  uint64_t z = key + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The constant a pattern's base value depends on in pass `pass`: the walking pattern's position, the random
// stream's key (0 where the pattern has none).
inline uint64_t pattern_param(const PatternDef& p, uint64_t seed, int pass) {
  switch (p.fill) {
    case Fill::walking: return kWalkingBytes << (pass % 8);
    case Fill::random: return word_hash(seed, 0x6d656d7465737400ull + static_cast<uint64_t>(pass));
    default: return 0;
  }
}

// The base value of the word at device address `address`, number `index` among all tested words.
template <Fill F>
GPUACCEPT_HD uint64_t base_value(uint64_t param, uint64_t address, uint64_t index) {
  if (F == Fill::address) return address;
  if (F == Fill::random) return word_hash(param, index);
  return param;  // zeros, walking
}

// What a sweep does with one word: `expected` what a check compares `found` (the word as read) with, `written`
// what a write stores. Returns whether the word holds its expected value (true where the sweep does not check).
template <Fill F>
GPUACCEPT_HD bool word_step(const Sweep& s, uint64_t param, uint64_t address, uint64_t index, uint64_t found,
                            uint64_t* expected, uint64_t* written) {
  const uint64_t base = base_value<F>(param, address, index);
  *expected = base ^ s.check_xor;
  *written = base ^ s.write_xor;
  return !s.check || found == *expected;
}

// The bad words one thread found in one sweep: counted, with their lowest and highest index, and whether the one
// just added is its first (the only one it records: a GPU whose memory is wholly bad records a few, not billions).
struct Tally {
  uint64_t bad = 0, lowest = kAllOnes, highest = 0;
  GPUACCEPT_HD bool add(uint64_t index) {
    ++bad;
    if (index < lowest) lowest = index;
    if (index > highest) highest = index;
    return bad == 1;
  }
};

// One bad word as the kernels record it.
struct BadWord {
  uint64_t index;     // among all tested words of the GPU (its byte offset is index * 8)
  uint64_t address;   // device (virtual) address
  uint64_t expected;  // what the word must hold
  uint64_t found;     // what was read
  int32_t sweep;      // the sweep of the pattern that found it
  int32_t pass;       // filled in by the host
};

// A GPU's bad words in one run of a pattern, counted on the GPU: `mismatches` words, the lowest and highest
// index, and the first kMaxRecords recorded (`taken` slots asked for; more than kMaxRecords: some not recorded).
struct ErrorLog {
  unsigned long long mismatches = 0, lowest = kAllOnes, highest = 0, taken = 0;
  BadWord first[kMaxRecords];
};

// Bytes a pattern moves per tested byte: one for each sweep that reads and one for each that writes.
inline int traffic_per_byte(const PatternDef& p) {
  int n = 0;
  for (int i = 0; i < p.sweeps; ++i) n += (p.sweep[i].check ? 1 : 0) + (p.sweep[i].write ? 1 : 0);
  return n;
}

// How much of one GPU's memory is tested: what was free less the margin (`margin_mib` plus kMarginPercent of the
// total, rounded up to kAllocGranularity) times `fraction`, rounded down to kAllocGranularity. `refused` says
// why a GPU is not tested (less than kMinTestBytes to test).
struct Sizing {
  uint64_t free_bytes = 0, total_bytes = 0, margin_bytes = 0, target_bytes = 0;
  std::string refused;
};

inline uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
inline uint64_t round_down(uint64_t v, uint64_t to) { return v / to * to; }

inline std::string mib_text(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

inline Sizing plan_size(uint64_t free_bytes, uint64_t total_bytes, double fraction, uint64_t margin_mib) {
  Sizing s;
  s.free_bytes = free_bytes;
  s.total_bytes = total_bytes;
  s.margin_bytes = round_up((margin_mib << 20) + total_bytes / 100 * kMarginPercent, kAllocGranularity);
  const uint64_t usable = free_bytes > s.margin_bytes ? free_bytes - s.margin_bytes : 0;
  s.target_bytes = round_down(static_cast<uint64_t>(static_cast<double>(usable) * fraction), kAllocGranularity);
  if (s.target_bytes < kMinTestBytes)
    s.refused = "only " + mib_text(s.target_bytes) + " to test: " + mib_text(free_bytes) + " free of " +
                mib_text(total_bytes) + ", less the margin of " + mib_text(s.margin_bytes) +
                " (another process holds the GPU's memory? see `nvidia-smi`), at least " + mib_text(kMinTestBytes) +
                " needed";
  return s;
}

// A 64-bit value as the document writes it ("0x" and 16 hex digits: JSON numbers lose bits above 2^53).
inline std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The bit positions set in `v` (of expected XOR found: the bits that flipped), lowest first.
inline std::vector<int> bits_of(uint64_t v) {
  std::vector<int> out;
  for (int b = 0; b < 64; ++b)
    if (v >> b & 1) out.push_back(b);
  return out;
}

// The index of the pattern with key `key`, or -1.
inline int pattern_index(const std::string& key) {
  for (int i = 0; i < kNumPatterns; ++i)
    if (key == kPatterns[i].key) return i;
  return -1;
}

}  // namespace memtest
}  // namespace gpuaccept
