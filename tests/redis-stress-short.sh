#!/usr/bin/env bash
# Description: ufault-stress --store runs the seed's race finder and the
# randomized model checker clean on objects in a Redis Cluster.
set -u
B=${B:-build}
if [ -z "${UFAULT_TEST_REDIS:-}" ]; then
	echo "no test cluster (UFAULT_TEST_REDIS unset: run under tests/redis-cluster run)"
	exit 77
fi
exec "$B/ufault-stress" --seconds "${UT_REDIS_STRESS_SECONDS:-12}" \
	--store "$UFAULT_TEST_REDIS/stress-$$"
