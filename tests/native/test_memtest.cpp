// Unit tests of reframe_checks/src/memtest/memtest_patterns.h, compiled and run by tests/test_build.py: the
// patterns' word logic that the GPU kernels run, here over host memory with faults put in on purpose (a flipped
// bit, a stuck bit, two aliased words), and the sizing of the memory tested.
#include <cassert>
#include <cstdio>
#include <functional>
#include <set>
#include <vector>

#include "bench_common.h"
#include "memtest_patterns.h"

using namespace gpuaccept::memtest;

namespace {

// Memory as the host model sees it: words at a fake device address, with an optional fault applied to every
// access (`cell` maps a word to the storage it really uses; `stuck` forces bits after each write).
struct Memory {
  std::vector<uint64_t> cells;
  uint64_t base = 0x7f0000000000ull;
  std::function<size_t(size_t)> cell = [](size_t w) { return w; };
  std::function<uint64_t(size_t, uint64_t)> stuck = [](size_t, uint64_t v) { return v; };
  explicit Memory(size_t words) : cells(words, 0xdeadbeefdeadbeefull) {}
  uint64_t read(size_t w) const { return cells[cell(w)]; }
  void write(size_t w, uint64_t v) { cells[cell(w)] = stuck(w, v); }
};

struct Found {
  Tally tally;
  std::vector<BadWord> first;
};

// One sweep as sweep_kernel runs it, one thread taking every pair in order (rising or falling).
template <Fill F>
void sweep_words(Memory& m, const Sweep& s, uint64_t param, int sweep, Found& out) {
  const size_t pairs = m.cells.size() / 2;
  for (size_t j = 0; j < pairs; ++j) {
    const size_t k = s.down ? pairs - 1 - j : j;
    for (size_t w = 2 * k; w < 2 * k + 2; ++w) {
      const uint64_t found = s.check ? m.read(w) : 0;
      uint64_t expected = 0, written = 0;
      const bool ok = word_step<F>(s, param, m.base + 8 * w, w, found, &expected, &written);
      if (!ok && out.tally.add(w) && out.first.size() < kMaxRecords)
        out.first.push_back(BadWord{w, m.base + 8 * w, expected, found, sweep, 0});
      if (s.write) m.write(w, written);
    }
  }
}

void sweep(Memory& m, const PatternDef& p, int si, uint64_t param, Found& out) {
  switch (p.fill) {
    case Fill::zeros: sweep_words<Fill::zeros>(m, p.sweep[si], param, si, out); break;
    case Fill::walking: sweep_words<Fill::walking>(m, p.sweep[si], param, si, out); break;
    case Fill::address: sweep_words<Fill::address>(m, p.sweep[si], param, si, out); break;
    case Fill::random: sweep_words<Fill::random>(m, p.sweep[si], param, si, out); break;
  }
}

// A whole pattern in pass `pass`; `after_fill` runs between the first sweep and the second (the self-test's place).
Found run(Memory& m, const PatternDef& p, int pass, const std::function<void(Memory&)>& after_fill = nullptr) {
  Found out;
  const uint64_t param = pattern_param(p, 42, pass);
  for (int si = 0; si < p.sweeps; ++si) {
    sweep(m, p, si, param, out);
    if (si == 0 && after_fill) after_fill(m);
  }
  return out;
}

}  // namespace

int main() {
  // SplitMix64 with seed 0: its first outputs (the published reference sequence), and the same function as
  // bench_common.h's mix64 at the state key + index * gamma.
  assert(word_hash(0, 0) == 0xe220a8397b1dcdafull);
  assert(word_hash(0, 1) == 0x6e789e6aa1b965f4ull);
  assert(word_hash(0, 2) == 0x06c45d188009454full);
  assert(word_hash(123, 7) == gpuaccept::mix64(123 + 7 * 0x9e3779b97f4a7c15ull));
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 100000; ++i) seen.insert(word_hash(pattern_param(kPatterns[3], 1, 0), i));
  assert(seen.size() == 100000);
  assert(pattern_param(kPatterns[3], 1, 0) != pattern_param(kPatterns[3], 1, 1));
  assert(pattern_param(kPatterns[3], 1, 0) != pattern_param(kPatterns[3], 2, 0));

  // The registry: stable keys in order, traffic per tested byte (fill 1, check+write 2, check 1).
  assert(kNumPatterns == 4 && pattern_index("moving_inversions_ones_zeros") == 0 && pattern_index("random") == 3);
  assert(pattern_index("address_in_address") == 2 && pattern_index("nope") == -1);
  assert(traffic_per_byte(kPatterns[0]) == 5 && traffic_per_byte(kPatterns[1]) == 5);
  assert(traffic_per_byte(kPatterns[2]) == 4 && traffic_per_byte(kPatterns[3]) == 4);
  for (const auto& p : kPatterns) assert(!p.sweep[0].check && p.sweep[0].write && p.sweep[1].check);
  // The walking pattern puts its bit in each of a byte's 8 positions over 8 passes, then starts again.
  std::set<uint64_t> walks;
  for (int pass = 0; pass < 8; ++pass) walks.insert(pattern_param(kPatterns[1], 1, pass));
  assert(walks.size() == 8 && walks.count(0x0101010101010101ull) && walks.count(0x8080808080808080ull));
  assert(pattern_param(kPatterns[1], 1, 8) == pattern_param(kPatterns[1], 1, 0));

  for (const auto& p : kPatterns) {
    for (int pass = 0; pass < 9; ++pass) {
      // Healthy memory: nothing found; the last sweep leaves what the pattern says.
      Memory m(4096);
      const Found clean = run(m, p, pass);
      assert(clean.tally.bad == 0 && clean.first.empty());
      const uint64_t param = pattern_param(p, 42, pass);
      for (size_t w = 0; w < m.cells.size(); ++w) {
        const uint64_t v = p.fill == Fill::address  ? ~(m.base + 8 * w)
                           : p.fill == Fill::random ? ~word_hash(param, w)
                                                    : param;
        assert(m.cells[w] == v);
      }
    }
    // One bit flipped between the fill and the check (what --inject-error does on the GPU): exactly that word,
    // with expected XOR found the flipped bit.
    Memory m(4096);
    const Found f = run(m, p, 3, [](Memory& mm) { mm.cells[1234] ^= 1ull << 17; });
    assert(f.tally.bad == 1 && f.tally.lowest == 1234 && f.tally.highest == 1234 && f.first.size() == 1);
    assert(f.first[0].index == 1234 && f.first[0].address == m.base + 8 * 1234 && f.first[0].sweep == 1);
    assert((f.first[0].expected ^ f.first[0].found) == 1ull << 17);
    assert(bits_of(f.first[0].expected ^ f.first[0].found) == std::vector<int>{17});
  }

  // A bit stuck at 0 in one word: every pattern that writes a one there finds it.
  for (const auto& p : kPatterns) {
    Memory m(4096);
    m.stuck = [](size_t w, uint64_t v) { return w == 777 ? v & ~(1ull << 5) : v; };
    const Found f = run(m, p, 0);
    assert(f.tally.bad >= 1 && f.tally.lowest == 777 && f.tally.highest == 777);
    assert(f.first[0].index == 777 && (f.first[0].expected ^ f.first[0].found) == 1ull << 5);
  }

  // Two words decoded to one cell (a broken address line): both patterns find both words. A word's own address
  // finds the lower, whose cell the higher overwrote; moving inversions finds the higher on the rising sweep
  // (its cell already inverted) and the lower on the falling one (its cell already restored).
  {
    auto alias = [](size_t w) { return w == 2048 + 100 ? size_t{100} : w; };
    Memory m(4096);
    m.cell = alias;
    const Found mi = run(m, kPatterns[0], 0);
    assert(mi.tally.bad == 2 && mi.tally.lowest == 100 && mi.tally.highest == 2148);
    assert(mi.first[0].index == 2148 && mi.first[0].sweep == 1);
    Memory a(4096);
    a.cell = alias;
    const Found f = run(a, kPatterns[2], 0);
    assert(f.tally.bad >= 2 && f.tally.lowest == 100 && f.tally.highest == 2148);
  }

  // The margin: 256 MiB + 2 % of the total, rounded up to 2 MiB; the rest of what is free, times the fraction,
  // rounded down to 2 MiB. An H100 80GB's figures.
  const uint64_t total = 85520809984ull, free_b = 84810526720ull;
  const Sizing s = plan_size(free_b, total, 1.0, 256);
  assert(s.margin_bytes == round_up((256ull << 20) + total / 100 * 2, 2ull << 20));
  assert(s.margin_bytes % (2ull << 20) == 0 && s.target_bytes % (2ull << 20) == 0);
  assert(s.target_bytes <= free_b - s.margin_bytes && free_b - s.margin_bytes - s.target_bytes < (2ull << 20));
  assert(s.refused.empty() && static_cast<double>(s.target_bytes) / total > 0.96);
  const Sizing half = plan_size(free_b, total, 0.5, 256);
  assert(half.target_bytes <= s.target_bytes / 2 + (2ull << 20) && half.target_bytes >= s.target_bytes / 2 - (2ull << 20));
  // Another process holds nearly all of it: refused, saying how much was free and the margin.
  const Sizing full = plan_size(1ull << 30, total, 1.0, 256);
  assert(full.target_bytes == 0 && full.refused.find("1024 MiB free of 81559 MiB") != std::string::npos);
  assert(full.refused.find("margin of") != std::string::npos);

  assert(hex64(0x20000) == "0x0000000000020000" && hex64(~0ull) == "0xffffffffffffffff");
  assert((bits_of(0x8000000000000005ull) == std::vector<int>{0, 2, 63}) && bits_of(0).empty());
  std::puts("ok");
  return 0;
}
