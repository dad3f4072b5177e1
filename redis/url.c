// SPDX-License-Identifier: MIT
/*
 * redis://[[user]:password@]host:port[,host:port...]/NAME[?k=v&k=v]
 *
 * No percent-decoding: a password that needs it goes in
 * UFAULT_REDIS_PASSWORD instead.  Every malformed part is -EINVAL and
 * leaves @cfg empty.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS	15000
#define DEFAULT_LEASE_MS	10000

void rc_config_free(struct rc_config *cfg)
{
	unsigned int i;

	if (!cfg)
		return;
	for (i = 0; i < cfg->nseeds; i++)
		free(cfg->seeds[i].host);
	free(cfg->seeds);
	free(cfg->user);
	if (cfg->pass)
		explicit_bzero(cfg->pass, strlen(cfg->pass));
	free(cfg->pass);
	free(cfg->name);
	memset(cfg, 0, sizeof(*cfg));
}

/* A decimal number in [min, max] spanning exactly [s, s + len). */
static int parse_uint(const char *s, size_t len, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (!len || len > 10)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static bool name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > RC_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c == 0x7f || strchr("{}?#%", c))
			return false;
	}
	return true;
}

static int parse_seed(const char *s, size_t len, struct rc_seed *seed)
{
	const char *colon, *host = s;
	size_t hostlen;
	unsigned long port;

	colon = memrchr(s, ':', len);
	if (!colon)
		return -EINVAL;
	hostlen = (size_t)(colon - s);
	if (hostlen >= 2 && s[0] == '[' && s[hostlen - 1] == ']') {	/* [v6 address] */
		host++;
		hostlen -= 2;
	}
	if (!hostlen || hostlen > 255 || memchr(host, '@', hostlen) || memchr(host, '/', hostlen))
		return -EINVAL;
	if (parse_uint(colon + 1, (size_t)(s + len - colon - 1), 1, 65535, &port))
		return -EINVAL;
	seed->host = strndup(host, hostlen);
	if (!seed->host)
		return -ENOMEM;
	seed->port = (int)port;
	return 0;
}

static int parse_params(const char *q, struct rc_config *cfg)
{
	while (*q) {
		const char *amp = strchrnul(q, '&'), *eq = memchr(q, '=', (size_t)(amp - q));
		unsigned long v;
		size_t klen;

		if (!eq)
			return -EINVAL;
		klen = (size_t)(eq - q);
		eq++;
		if (klen == 8 && !memcmp(q, "replicas", 8)) {
			if (parse_uint(eq, (size_t)(amp - eq), 0, 16, &v))
				return -EINVAL;
			cfg->replicas = (int)v;
		} else if (klen == 10 && !memcmp(q, "timeout_ms", 10)) {
			if (parse_uint(eq, (size_t)(amp - eq), 1, 86400000, &v))
				return -EINVAL;
			cfg->timeout_ms = (unsigned int)v;
		} else if (klen == 8 && !memcmp(q, "lease_ms", 8)) {
			if (parse_uint(eq, (size_t)(amp - eq), 100, 3600000, &v))
				return -EINVAL;
			cfg->lease_ms = (unsigned int)v;
		} else {
			return -EINVAL;
		}
		q = *amp ? amp + 1 : amp;
	}
	return 0;
}

static int parse(const char *url, struct rc_config *cfg)
{
	static const char scheme[] = "redis://";
	const char *auth, *slash, *at, *hosts, *name, *q;
	const char *env;
	int ret;

	if (strncmp(url, scheme, sizeof(scheme) - 1))
		return -EINVAL;
	auth = url + sizeof(scheme) - 1;
	slash = strchr(auth, '/');
	if (!slash)
		return -EINVAL;		/* no NAME */
	at = memrchr(auth, '@', (size_t)(slash - auth));
	hosts = auth;
	if (at) {
		const char *colon = memchr(auth, ':', (size_t)(at - auth));

		if (colon) {
			if (colon > auth && !(cfg->user = strndup(auth, (size_t)(colon - auth))))
				return -ENOMEM;
			if (at > colon + 1 && !(cfg->pass = strndup(colon + 1, (size_t)(at - colon - 1))))
				return -ENOMEM;
		} else if (at > auth) {
			if (!(cfg->user = strndup(auth, (size_t)(at - auth))))
				return -ENOMEM;
		} else {
			return -EINVAL;	/* "@host" */
		}
		hosts = at + 1;
	}
	if (!cfg->pass && (env = getenv("UFAULT_REDIS_PASSWORD")) && *env &&
	    !(cfg->pass = strdup(env)))
		return -ENOMEM;

	while (hosts < slash) {
		const char *comma = memchr(hosts, ',', (size_t)(slash - hosts));
		const char *end = comma ? comma : slash;
		struct rc_seed *s;

		if (cfg->nseeds >= 64)
			return -EINVAL;
		s = realloc(cfg->seeds, (cfg->nseeds + 1) * sizeof(*s));
		if (!s)
			return -ENOMEM;
		cfg->seeds = s;
		ret = parse_seed(hosts, (size_t)(end - hosts), &s[cfg->nseeds]);
		if (ret)
			return ret;
		cfg->nseeds++;
		hosts = comma ? comma + 1 : slash;
		if (comma && hosts == slash)
			return -EINVAL;	/* trailing comma */
	}
	if (!cfg->nseeds)
		return -EINVAL;

	name = slash + 1;
	q = strchrnul(name, '?');
	if (!name_ok(name, (size_t)(q - name)))
		return -EINVAL;
	if (!(cfg->name = strndup(name, (size_t)(q - name))))
		return -ENOMEM;
	return *q ? parse_params(q + 1, cfg) : 0;
}

int rc_parse_url(const char *url, struct rc_config *cfg)
{
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	cfg->replicas = -1;
	cfg->timeout_ms = DEFAULT_TIMEOUT_MS;
	cfg->lease_ms = DEFAULT_LEASE_MS;
	if (!url)
		return -EINVAL;
	ret = parse(url, cfg);
	if (ret)
		rc_config_free(cfg);
	return ret;
}
