// Umbrella kept for tools/ and tests/: the loader header is sim/config/json_reader.h
// (docs/architecture.md#sim).
#pragma once
#include "sim/config/json_reader.h"
