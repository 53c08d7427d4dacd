// Compatibility include: the model lives in models/mem/ (docs/models/README.md).
#pragma once
#include "models/mem/hbm.h"
