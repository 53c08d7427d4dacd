// Compatibility include: the register map lives in models/npu/ (docs/models/README.md).
#pragma once
#include "models/npu/regmap.h"
