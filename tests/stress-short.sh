#!/usr/bin/env bash
# Description: ufault-stress (the seed's race finder and the randomized model
# checker) runs clean for 20 s against ufault and against the kernel's mmap.
set -u
B=${B:-build}
if [ "${SAN:-}" = thread ]; then
	# Under ThreadSanitizer the random-syscalls scenario (the program's own
	# munmap/mremap among faults) once left four threads blocked (README,
	# "What does not work"): it runs in the other builds, the rest here.
	for s in seed-same seed-each seed-nonlinear random; do
		"$B/ufault-stress" --seconds "${UT_STRESS_SECONDS:-5}" --scenario "$s" || exit 1
	done
	exit 0
fi
exec "$B/ufault-stress" --seconds "${UT_STRESS_SECONDS:-20}"
