// killpoint_probe: reaches the kill point "probe" ten times, then exits 0.
// harness_test runs it under different CAIRN_KILLPOINT values.
#include "common/killpoint.h"

int main() {
  for (int i = 0; i < 10; ++i) CAIRN_KILLPOINT("probe");
  return 0;
}
