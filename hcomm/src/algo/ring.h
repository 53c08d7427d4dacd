// Ring (docs/algorithms/ring.md): see algo/family.h; kRing is declared there.
#pragma once
#include "algo/family.h"
