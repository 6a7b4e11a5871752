#include "src/core/Error.hpp"

// The hierarchy is header-only; this unit anchors the library target.
namespace deepkf {}
