// Golden blobs (tests/data/golden, written by tools/make_golden_blobs.py through the Python
// package): every blob is read by the C++ deserialize() of its family and key type and must
// re-serialize byte-identically, expose the release state its header bits say, and match the
// manifest's n and release count (a manifest off by one must be reported: the check can fail).
// Then every single-byte change of every blob must be either
// rejected (DeserializeError) or read back as exactly the changed bytes (the format is canonical),
// so a reader that silently normalised or misparsed a field would fail here.
//
// Usage: golden_blobs [DIR]  (default: DPSKETCH_GOLDEN_DIR, set by tests/cpp/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/release/private_dyadic.hpp"
#include "dpsketch/release/private_sketch.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace {

using namespace dpsketch;
namespace fs = std::filesystem;
using I64 = std::int64_t;
using Str = std::string;

int failures = 0;
bool quiet = false;  // while checking that the check itself fails on a wrong expectation

void fail(const std::string& file, const std::string& what) {
  ++failures;
  if (!quiet) std::fprintf(stderr, "FAIL %s: %s\n", file.c_str(), what.c_str());
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The integer after `"key": ` in one manifest line (each blob's entry is one line), if present.
std::optional<long long> fact(const std::string& line, const std::string& key) {
  const std::string pat = "\"" + key + "\": ";
  const auto at = line.find(pat);
  if (at == std::string::npos) return std::nullopt;
  const char* p = line.c_str() + at + pat.size();
  char* end = nullptr;
  const long long v = std::strtoll(p, &end, 10);
  if (end == p) return std::nullopt;  // null, true, a list...
  return v;
}

template <class T>
auto merged_of(const T& s, int) -> decltype(s.merged()) { return s.merged(); }
template <class T>
bool merged_of(const T&, long) { return false; }
template <class T>
auto n_of(const T& s, int) -> decltype(s.n()) { return s.n(); }
template <class T>
auto n_of(const T& s, long) -> decltype(s.sketch().n()) { return s.sketch().n(); }

// Reads `b` as T; checks the round trip, the exposed header state and the manifest facts.
template <class T>
void check(const std::string& file, const std::string& b, const std::string& line) {
  T s = T::deserialize(b);
  if (s.serialize() != b) fail(file, "re-serialization differs");
  if (s.serialized_size() != b.size()) fail(file, "serialized_size() differs from the length");
  const auto flags = static_cast<std::uint8_t>(b[7]);
  if ((s.release_count() > 0) != ((flags & kFlagReleaseTrailer) != 0)) fail(file, "release count vs bit 1");
  if (s.published() != ((flags & kFlagPublished) != 0)) fail(file, "published vs bit 2");
  if (s.seeded() != ((flags & kFlagSeeded) != 0)) fail(file, "seeded vs bit 3");
  if (merged_of(s, 0) != ((flags & kFlagMerged) != 0)) fail(file, "merged vs bit 0");
  if (const auto rc = fact(line, "release_count"); !rc || static_cast<long long>(s.release_count()) != *rc)
    fail(file, "release count differs from the manifest");
  if (const auto n = fact(line, "n"); n && static_cast<long long>(n_of(s, 0)) != *n) fail(file, "n differs from the manifest");
  if constexpr (!std::is_same_v<T, dyadic::DyadicCountSketch> && !std::is_same_v<T, dyadic::PrivateDyadicCountSketch>) {
    if (s.untyped() != (b[6] == 0)) fail(file, "untyped vs key tag 0");
  }
}

// Every change of one byte is rejected or read back exactly (never normalised, never a crash).
template <class T>
void mutate(const std::string& file, const std::string& b) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    const unsigned char masks[] = {0x01, 0x80, 0xff};
    for (const unsigned char x : masks) {
      std::string m = b;
      m[i] = static_cast<char>(static_cast<unsigned char>(m[i]) ^ x);
      try {
        const T s = T::deserialize(m);
        if (s.serialize() != m || s.serialized_size() != m.size())
          fail(file, "byte " + std::to_string(i) + " changed: accepted but not canonical");
      } catch (const DeserializeError&) {
      }
    }
  }
  // Truncations, the trailer included.
  for (std::size_t k = 1; k <= 10 && k <= b.size(); ++k) {
    try {
      const T s = T::deserialize(std::string_view(b).substr(0, b.size() - k));
      if (s.serialize() == b) fail(file, "truncated bytes re-serialize as the original");
    } catch (const DeserializeError&) {
    }
  }
}

// The check has teeth: a manifest that says n + 1 (or one more release) must make it fail.
template <class T>
void check_fails_on_a_wrong_fact(const std::string& file, const std::string& b, const std::string& line) {
  for (const std::string key : {"n", "release_count"}) {
    const auto v = fact(line, key);
    if (!v) continue;
    const std::string pat = "\"" + key + "\": ";
    const auto at = line.find(pat) + pat.size();
    std::string wrong = line;
    wrong.replace(at, std::to_string(*v).size(), std::to_string(*v + 1));
    const int before = failures;
    quiet = true;
    check<T>(file, b, wrong);
    quiet = false;
    const bool caught = failures > before;
    failures = before;
    if (!caught) fail(file, "a wrong " + key + " in the manifest went unnoticed");
  }
}

template <class T>
void run(const std::string& file, const std::string& b, const std::string& line) {
  try {
    check<T>(file, b, line);
  } catch (const std::exception& e) {
    fail(file, std::string("rejected: ") + e.what());
    return;
  }
  check_fails_on_a_wrong_fact<T>(file, b, line);
  mutate<T>(file, b);
}

// Dispatch on the family byte and the key tag (0, untyped, has the int64 layout).
void dispatch(const std::string& file, const std::string& b, const std::string& line) {
  if (b.size() < kHeaderBytes) return fail(file, "shorter than a header");
  const int family = static_cast<unsigned char>(b[5]);
  const bool str = static_cast<unsigned char>(b[6]) == 2;
  using release::PrivateSketch;
  switch (family) {
    case 1: return str ? run<MisraGries<Str>>(file, b, line) : run<MisraGries<I64>>(file, b, line);
    case 2: return str ? run<SpaceSaving<Str>>(file, b, line) : run<SpaceSaving<I64>>(file, b, line);
    case 3: return str ? run<CountMin<Str>>(file, b, line) : run<CountMin<I64>>(file, b, line);
    case 4: return str ? run<CountSketch<Str>>(file, b, line) : run<CountSketch<I64>>(file, b, line);
    case 5: return run<dyadic::DyadicCountSketch>(file, b, line);
    case 7:
      return str ? run<PrivateSketch<Str, SketchKind::count_min>>(file, b, line)
                 : run<PrivateSketch<I64, SketchKind::count_min>>(file, b, line);
    case 8:
      return str ? run<PrivateSketch<Str, SketchKind::count_sketch>>(file, b, line)
                 : run<PrivateSketch<I64, SketchKind::count_sketch>>(file, b, line);
    case 9: return run<dyadic::PrivateDyadicCountSketch>(file, b, line);
    default: return fail(file, "unknown family " + std::to_string(family));
  }
}

}  // namespace

int main(int argc, char** argv) {
#ifdef DPSKETCH_GOLDEN_DIR
  fs::path dir = DPSKETCH_GOLDEN_DIR;
#else
  fs::path dir = "tests/data/golden";
#endif
  if (argc > 1) dir = argv[1];
  std::ifstream manifest(dir / "manifest.json");
  if (!manifest) {
    std::fprintf(stderr, "no manifest.json in %s\n", dir.string().c_str());
    return 1;
  }
  std::size_t listed = 0, read = 0;
  for (std::string line; std::getline(manifest, line);) {
    const std::string pat = "{\"file\": \"";
    const auto at = line.find(pat);
    if (at == std::string::npos) continue;
    const auto end = line.find('"', at + pat.size());
    const std::string file = line.substr(at + pat.size(), end - at - pat.size());
    ++listed;
    if (!fs::exists(dir / file)) {
      fail(file, "listed in the manifest but missing");
      continue;
    }
    const std::string b = read_all(dir / file);
    if (const auto len = fact(line, "bytes"); !len || static_cast<long long>(b.size()) != *len)
      fail(file, "length differs from the manifest");
    dispatch(file, b, line);
    ++read;
  }
  std::size_t on_disk = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".bin") ++on_disk;
  if (listed == 0 || on_disk != listed) {
    std::fprintf(stderr, "FAIL: %zu blobs listed, %zu on disk\n", listed, on_disk);
    ++failures;
  }
  std::printf("golden_blobs: %zu blobs read from %s, %d failure(s)\n", read, dir.string().c_str(), failures);
  return failures == 0 ? 0 : 1;
}
