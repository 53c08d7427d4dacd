// A one-rank in-memory driver (tests/hcomm/fake_driver.h) loadable through HCOMM_DRIVER, so the
// Python module's data paths (staging, copies back, requests, collectives over one rank) can be
// checked without a simulator: tests/python/test_module_fake.py.
#include "fake_driver.h"

extern "C" hcomm::Driver* hcomm_driver_open() {
  static hcomm_fake::FakeDriver d(1, 1);
  return &d;
}
