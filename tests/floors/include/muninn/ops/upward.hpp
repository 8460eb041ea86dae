#pragma once
// Fixture of include_floors_rejects_upward: an op that reaches up to the model floor.
#include "muninn/model/model.hpp"
