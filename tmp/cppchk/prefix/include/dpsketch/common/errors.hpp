// Error types. The bindings map std::invalid_argument to ValueError, std::overflow_error to
// OverflowError and std::domain_error to TypeError; messages say what to do instead.
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
  StreamLimitError(unsigned long long n, unsigned long long more)
      : std::overflow_error("this summary already holds " + std::to_string(n) + " updates and " + std::to_string(more) +
                            " more would exceed the limit of 2^62 updates per summary; nothing was changed. Start a new "
                            "summary (or split the stream) instead of growing this one") {}
};

// Raised when a summary/sketch parameter is out of range.
struct ParameterError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace dpsketch
