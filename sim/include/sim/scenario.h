// Umbrella kept for tools/ and tests/: the loader header is sim/config/scenario.h
// (docs/architecture.md#sim).
#pragma once
#include "sim/config/scenario.h"
