// Umbrella kept for tools/ and tests/: the loader header is sim/config/units.h
// (docs/architecture.md#sim).
#pragma once
#include "sim/config/units.h"
