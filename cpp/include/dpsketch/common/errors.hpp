// Error types. The bindings translate each to a subclass of dpsketch.DPSketchError that also
// derives from the matching built-in (ParameterError and DeserializeError: ValueError,
// StreamLimitError and NoiseRangeError: OverflowError, EntropyError: RuntimeError); messages say
// what to do instead. Other standard exceptions map by kind (bindings/bind_errors.cpp).
#pragma once

#include <stdexcept>
#include <string>

namespace dpsketch {

// Raised for corrupt, truncated or mismatched serialized bytes. Never echoes key material.
struct DeserializeError : std::invalid_argument {
  explicit DeserializeError(const std::string& what)
      : std::invalid_argument("corrupt or incompatible dpsketch bytes: " + what) {}
};

// Raised by update/update_many/merge when the stream would exceed kMaxStreamLength (2^62 updates,
// common/limits.hpp); nothing has been changed when it is thrown. OverflowError in Python.
struct StreamLimitError : std::overflow_error {
  // The message names the batch (the caller's) but not the summary's length, which is data.
  StreamLimitError(unsigned long long /*n*/, unsigned long long more)
      : std::overflow_error("adding " + std::to_string(more) +
                            " more updates would take this summary past its limit of 2^62 updates; nothing was "
                            "changed. Start a new summary (or split the stream) instead of growing this one") {}
};

// Raised when a summary/sketch parameter is out of range.
struct ParameterError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Raised by the noise samplers for a scale or a draw outside what their integer arithmetic holds.
struct NoiseRangeError : std::overflow_error {
  using std::overflow_error::overflow_error;
};

// Raised when the operating system's entropy source fails (the secure generator cannot be keyed).
struct EntropyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dpsketch
