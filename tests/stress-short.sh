#!/usr/bin/env bash
# Description: ufault-stress (the seed's race finder and the randomized model
# checker) runs clean for 20 s against ufault and against the kernel's mmap.
set -u
B=${B:-build}
exec "$B/ufault-stress" --seconds "${UT_STRESS_SECONDS:-20}"
