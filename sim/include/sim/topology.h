// Umbrella kept for tools/ and tests/: the loader header is sim/config/topology.h
// (docs/architecture.md#sim).
#pragma once
#include "sim/config/topology.h"
