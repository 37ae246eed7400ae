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

// Raised when a summary/sketch parameter is out of range.
struct ParameterError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace dpsketch
