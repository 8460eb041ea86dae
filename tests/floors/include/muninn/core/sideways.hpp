#pragma once
// Fixture of include_floors_rejects_upward: an include on the same floor, which is allowed.
#include "muninn/core/error.hpp"
