// Compatibility include: the model lives in models/mem/ (docs/models/README.md).
#pragma once
#include "models/mem/huge_alloc.h"
