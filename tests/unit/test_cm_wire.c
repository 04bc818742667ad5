// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm_wire.c - the CM side-channel wire format (src/cm/cma_wire.c).
 *
 * Pins the layout documented in cma_wire.h byte by byte, round-trips every
 * message type, then attacks the decoder: every truncation, every single
 * field out of range, and a fixed-seed fuzz loop checked against a second,
 * independent spelling of the header's rules (ref_valid() below). Every
 * buffer handed to the decoder ends exactly at a PROT_NONE guard page, so a
 * read past @len faults in a plain build too, not only under ASan.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "cm/cma_wire.h"

#define NTYPES	 8
#define WIRE_CAP (SRDMA_CM_MSG_MAX + 32)

/* Indexed by type - 1; the limits are the header's, typed in again. */
static const struct {
	unsigned int type;
	unsigned int pdata_max;
} types[NTYPES] = {
	{SRDMA_CM_REQ, 56},	  {SRDMA_CM_REP, 196},
	{SRDMA_CM_RTU, 224},	  {SRDMA_CM_REJ, 148},
	{SRDMA_CM_DREQ, 220},	  {SRDMA_CM_DREP, 224},
	{SRDMA_CM_SIDR_REQ, 180}, {SRDMA_CM_SIDR_REP, 136},
};

/*
 * Copy @len bytes so that they end exactly at a guard page; the returned
 * pointer is valid for @len bytes and not one more.
 */
static const uint8_t *at_guard(const uint8_t *src, size_t len)
{
	static uint8_t *page_end;

	if (!page_end) {
		long pg = sysconf(_SC_PAGESIZE);
		uint8_t *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		assert_true(p != MAP_FAILED);
		assert_int_equal(mprotect(p + pg, (size_t)pg, PROT_NONE), 0);
		page_end = p + pg;
	}
	assert_true(len <= WIRE_CAP);
	memcpy(page_end - len, src, len);
	return page_end - len;
}

static int decode_exact(const uint8_t *wire, size_t len,
			struct srdma_cm_msg *msg)
{
	return srdma_cm_decode(at_guard(wire, len), len, msg);
}

static int hdr_check_exact(const uint8_t *wire, size_t *len)
{
	return srdma_cm_hdr_check(at_guard(wire, SRDMA_CM_HDR_LEN), len);
}

enum pattern { PAT_ZERO, PAT_MAX, PAT_DISTINCT, NPATTERNS };

/* A valid message; PAT_DISTINCT gives every field its own bytes. */
static void make_msg(struct srdma_cm_msg *m, unsigned int type,
		     unsigned int pdata_len, enum pattern pat)
{
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->pdata_len = (uint8_t)pdata_len;
	for (i = 0; i < pdata_len; i++)
		m->pdata[i] = (uint8_t)(0xa5 ^ i ^ type << 5);
	switch (pat) {
	case PAT_ZERO:
		break;
	case PAT_MAX:
		m->port_space = 0xffff;
		m->qp_type = 0xff;
		m->flags = SRDMA_CM_F_ALL;
		m->qpn = 0xffffff;
		m->psn = 0xffffff;
		m->qkey = 0xffffffff;
		m->reason = 0xffff;
		m->lid = 0xffff;
		m->resp_res = 0xff;
		m->init_depth = 0xff;
		m->retry_count = 7;
		m->rnr_retry_count = 7;
		m->mtu = 5;
		memset(m->gid, 0xff, sizeof(m->gid));
		break;
	default:
		m->port_space = 0x0102;
		m->qp_type = 0x03;
		m->flags = SRDMA_CM_F_FLOW_CONTROL;
		m->qpn = 0x040506;
		m->psn = 0x070809;
		m->qkey = 0x0a0b0c0d;
		m->reason = 0x0e0f;
		m->lid = 0x1011;
		m->resp_res = 0x12;
		m->init_depth = 0x13;
		m->retry_count = 4;
		m->rnr_retry_count = 6;
		m->mtu = 2;
		for (i = 0; i < sizeof(m->gid); i++)
			m->gid[i] = (uint8_t)(0x20 + i);
		break;
	}
}

static void assert_msg_equal(const struct srdma_cm_msg *a,
			     const struct srdma_cm_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->qp_type, b->qp_type);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->resp_res, b->resp_res);
	assert_int_equal(a->init_depth, b->init_depth);
	assert_int_equal(a->retry_count, b->retry_count);
	assert_int_equal(a->rnr_retry_count, b->rnr_retry_count);
	assert_int_equal(a->mtu, b->mtu);
	assert_int_equal(a->port_space, b->port_space);
	assert_int_equal(a->reason, b->reason);
	assert_int_equal(a->lid, b->lid);
	assert_int_equal(a->qpn, b->qpn);
	assert_int_equal(a->psn, b->psn);
	assert_int_equal(a->qkey, b->qkey);
	assert_memory_equal(a->gid, b->gid, sizeof(a->gid));
	assert_int_equal(a->pdata_len, b->pdata_len);
	if (a->pdata_len)
		assert_memory_equal(a->pdata, b->pdata, a->pdata_len);
}

/* Encode a valid message of @type; returns its length. */
static size_t valid_wire(uint8_t *wire, unsigned int type,
			 unsigned int pdata_len)
{
	struct srdma_cm_msg m;
	struct srdma_cm_msg out;
	int n;

	make_msg(&m, type, pdata_len, PAT_DISTINCT);
	n = srdma_cm_encode(&m, wire);
	assert_int_equal(n, SRDMA_CM_FIXED_LEN + pdata_len);
	assert_int_equal(decode_exact(wire, (size_t)n, &out), 0);
	return (size_t)n;
}

static void test_cm_wire_pdata_max_per_type(void **state)
{
	unsigned int i;

	for (i = 0; i < NTYPES; i++) {
		assert_int_equal(types[i].type, i + 1);
		assert_int_equal(srdma_cm_pdata_max(types[i].type),
				 types[i].pdata_max);
	}
	assert_int_equal(srdma_cm_pdata_max(0), 0);
	assert_int_equal(srdma_cm_pdata_max(9), 0);
	assert_int_equal(srdma_cm_pdata_max(255), 0);
	assert_int_equal(srdma_cm_pdata_max(0x101), 0);
	assert_int_equal(SRDMA_CM_MSG_MAX, 280);
}

static void roundtrip_all(bool max_pdata)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg in, out;
	unsigned int i, len;
	int pat, n;

	for (i = 0; i < NTYPES; i++) {
		for (pat = 0; pat < NPATTERNS; pat++) {
			len = max_pdata ? types[i].pdata_max : 0;
			make_msg(&in, types[i].type, len, (enum pattern)pat);
			n = srdma_cm_encode(&in, wire);
			assert_int_equal(n, SRDMA_CM_FIXED_LEN + len);
			assert_int_equal(wire[6] << 8 | wire[7], n);
			assert_int_equal(wire[33], len);
			memset(&out, 0x5a, sizeof(out));
			assert_int_equal(decode_exact(wire, (size_t)n, &out),
					 0);
			assert_msg_equal(&in, &out);
		}
	}
}

static void test_cm_wire_roundtrip_max_pdata(void **state)
{
	roundtrip_all(true);
}

static void test_cm_wire_roundtrip_no_pdata(void **state)
{
	roundtrip_all(false);
}

static void test_cm_wire_layout_pinned(void **state)
{
	static const uint8_t want[60] = {
		'S',  'R',  'C',  'M',	/*  0 magic */
		0x01, 0x02, 0x00, 0x3c, /*  4 version, REP, len 60 */
		0x01, 0x06, 0x02, 0x03, /*  8 RDMA_PS_TCP, RC, flags */
		0x00, 0x12, 0x34, 0x56, /* 12 qpn */
		0x00, 0xab, 0xcd, 0xef, /* 16 psn */
		0x11, 0x22, 0x33, 0x44, /* 20 qkey */
		0x55, 0x66, 0x77, 0x88, /* 24 reason, 26 lid */
		0x99, 0xaa, 0x05, 0x06, /* 28 rr, id, retry, rnr */
		0x03, 0x04, 0x00, 0x00, /* 32 mtu, pdata_len, rsvd */
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, /* 36 gid */
		0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
		0x00, 0x00, 0x00, 0x00, /* 52 reserved */
		'p',  'd',  'a',  't',	/* 56 private data */
	};
	struct srdma_cm_msg m = {
		.type = SRDMA_CM_REP,
		.port_space = 0x0106,
		.qp_type = 2,
		.flags = SRDMA_CM_F_SRQ | SRDMA_CM_F_FLOW_CONTROL,
		.qpn = 0x123456,
		.psn = 0xabcdef,
		.qkey = 0x11223344,
		.reason = 0x5566,
		.lid = 0x7788,
		.resp_res = 0x99,
		.init_depth = 0xaa,
		.retry_count = 5,
		.rnr_retry_count = 6,
		.mtu = 3,
		.pdata_len = 4,
		.pdata = {'p', 'd', 'a', 't'},
	};
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < 16; i++)
		m.gid[i] = (uint8_t)(0xf0 + i);
	assert_int_equal(srdma_cm_encode(&m, wire), sizeof(want));
	assert_memory_equal(wire, want, sizeof(want));

	assert_int_equal(hdr_check_exact(want, &len), 0);
	assert_int_equal(len, sizeof(want));
	assert_int_equal(decode_exact(want, sizeof(want), &out), 0);
	assert_msg_equal(&m, &out);
}

static void test_cm_wire_encode_rejects_unknown_type(void **state)
{
	static const unsigned int bad[] = {0, 9, 0x80, 0xff};
	uint8_t wire[SRDMA_CM_MSG_MAX], before[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg m;
	unsigned int i;

	memset(wire, 0xee, sizeof(wire));
	memcpy(before, wire, sizeof(wire));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_msg(&m, bad[i], 0, PAT_DISTINCT);
		assert_int_equal(srdma_cm_encode(&m, wire), -EINVAL);
		/* Check, then write: a rejected message leaves @buf alone. */
		assert_memory_equal(wire, before, sizeof(wire));
	}
}

static void test_cm_wire_encode_rejects_pdata_over_limit(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX], before[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg m;
	unsigned int i, len;

	make_msg(&m, SRDMA_CM_REQ, 57, PAT_DISTINCT);
	assert_int_equal(srdma_cm_encode(&m, wire), -EINVAL);

	for (i = 0; i < NTYPES; i++) {
		for (len = types[i].pdata_max + 1; len <= 255; len++) {
			memset(wire, 0xee, sizeof(wire));
			memcpy(before, wire, sizeof(wire));
			make_msg(&m, types[i].type, 0, PAT_DISTINCT);
			m.pdata_len = (uint8_t)len;
			assert_int_equal(srdma_cm_encode(&m, wire), -EINVAL);
			assert_memory_equal(wire, before, sizeof(wire));
		}
		make_msg(&m, types[i].type, types[i].pdata_max, PAT_MAX);
		assert_int_equal(srdma_cm_encode(&m, wire),
				 SRDMA_CM_FIXED_LEN + types[i].pdata_max);
	}
}

static void test_cm_wire_hdr_check_bad_magic(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	size_t len, n;
	unsigned int off, bit;

	n = valid_wire(wire, SRDMA_CM_REQ, 8);
	for (off = 0; off < 4; off++) {
		for (bit = 0; bit < 8; bit++) {
			wire[off] ^= (uint8_t)(1u << bit);
			assert_int_equal(hdr_check_exact(wire, &len), -EPROTO);
			assert_int_equal(decode_exact(wire, n, &out), -EPROTO);
			wire[off] ^= (uint8_t)(1u << bit);
		}
	}
	memcpy(wire, "srcm", 4);
	assert_int_equal(hdr_check_exact(wire, &len), -EPROTO);
	memcpy(wire, "MCRS", 4); /* little-endian magic */
	assert_int_equal(hdr_check_exact(wire, &len), -EPROTO);
	memcpy(wire, "SRCM", 4);
	assert_int_equal(hdr_check_exact(wire, &len), 0);
	assert_int_equal(len, n);
}

static void test_cm_wire_hdr_check_other_version(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	size_t len, n;
	unsigned int v;

	n = valid_wire(wire, SRDMA_CM_DREQ, 0);
	for (v = 0; v <= 0xff; v++) {
		if (v == SRDMA_CM_WIRE_VERSION)
			continue;
		wire[4] = (uint8_t)v;
		assert_int_equal(hdr_check_exact(wire, &len), -EPROTONOSUPPORT);
		assert_int_equal(decode_exact(wire, n, &out), -EPROTONOSUPPORT);
	}
}

static void test_cm_wire_hdr_check_unknown_type(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	size_t len, n;
	unsigned int t;

	n = valid_wire(wire, SRDMA_CM_RTU, 0);
	for (t = 0; t <= 0xff; t++) {
		wire[5] = (uint8_t)t;
		if (t >= SRDMA_CM_REQ && t <= SRDMA_CM_SIDR_REP) {
			assert_int_equal(hdr_check_exact(wire, &len), 0);
			continue;
		}
		assert_int_equal(hdr_check_exact(wire, &len), -EPROTO);
		assert_int_equal(decode_exact(wire, n, &out), -EPROTO);
	}
}

static void test_cm_wire_hdr_check_length_bounds(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	unsigned int i, l, max;
	size_t len;

	for (i = 0; i < NTYPES; i++) {
		max = types[i].pdata_max;
		valid_wire(wire, types[i].type, 0);
		for (l = 0; l <= 0xffff; l++) {
			wire[6] = (uint8_t)(l >> 8);
			wire[7] = (uint8_t)l;
			len = 12345;
			if (l < SRDMA_CM_FIXED_LEN ||
			    l > SRDMA_CM_FIXED_LEN + max) {
				assert_int_equal(hdr_check_exact(wire, &len),
						 -EPROTO);
				continue;
			}
			assert_int_equal(hdr_check_exact(wire, &len), 0);
			assert_int_equal(len, l);
		}
	}
}

/* A well-framed message whose private data exceeds its type's limit. */
static void test_cm_wire_decode_rejects_pdata_over_type_limit(void **state)
{
	uint8_t wire[WIRE_CAP];
	struct srdma_cm_msg out;
	unsigned int i, p, l;

	for (i = 0; i < NTYPES; i++) {
		valid_wire(wire, types[i].type, 0);
		for (p = types[i].pdata_max + 1; p <= 255; p++) {
			l = SRDMA_CM_FIXED_LEN + p;
			if (l > WIRE_CAP)
				break;
			wire[6] = (uint8_t)(l >> 8);
			wire[7] = (uint8_t)l;
			wire[33] = (uint8_t)p;
			memset(wire + SRDMA_CM_FIXED_LEN, 0x3c, p);
			assert_int_equal(decode_exact(wire, l, &out), -EPROTO);
		}
	}
}

static void test_cm_wire_decode_rejects_every_truncation(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int i, k;
	size_t n, l;

	for (i = 0; i < NTYPES; i++) {
		for (k = 0; k < 2; k++) {
			n = valid_wire(wire, types[i].type,
				       k ? types[i].pdata_max : 0);
			for (l = 0; l < n; l++)
				assert_int_equal(decode_exact(wire, l, &out),
						 -EPROTO);
		}
	}
}

static void test_cm_wire_decode_rejects_overlong_buffer(void **state)
{
	uint8_t wire[WIRE_CAP];
	struct srdma_cm_msg out;
	unsigned int i, k;
	size_t n, l;

	for (i = 0; i < NTYPES; i++) {
		for (k = 0; k < 2; k++) {
			memset(wire, 0, sizeof(wire));
			n = valid_wire(wire, types[i].type,
				       k ? types[i].pdata_max : 0);
			for (l = n + 1; l <= WIRE_CAP; l++)
				assert_int_equal(decode_exact(wire, l, &out),
						 -EPROTO);
		}
	}
}

static void test_cm_wire_decode_rejects_pdata_len_mismatch(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int i, v;
	size_t n;

	for (i = 0; i < NTYPES; i++) {
		n = valid_wire(wire, types[i].type, types[i].pdata_max / 2);
		for (v = 0; v <= 0xff; v++) {
			if (v == n - SRDMA_CM_FIXED_LEN)
				continue;
			wire[33] = (uint8_t)v;
			assert_int_equal(decode_exact(wire, n, &out), -EPROTO);
		}
	}
}

static void test_cm_wire_decode_rejects_reserved_nonzero(void **state)
{
	static const unsigned int rsvd[] = {34, 35, 52, 53, 54, 55};
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int i, bit;
	size_t n;

	n = valid_wire(wire, SRDMA_CM_REP, 3);
	for (i = 0; i < sizeof(rsvd) / sizeof(rsvd[0]); i++) {
		for (bit = 0; bit < 8; bit++) {
			wire[rsvd[i]] = (uint8_t)(1u << bit);
			assert_int_equal(decode_exact(wire, n, &out), -EPROTO);
			wire[rsvd[i]] = 0;
		}
	}
	assert_int_equal(decode_exact(wire, n, &out), 0);
}

static void test_cm_wire_decode_rejects_qpn_psn_over_24_bits(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int off, v;
	size_t n;

	n = valid_wire(wire, SRDMA_CM_REQ, 0);
	for (off = 12; off <= 16; off += 4) {
		/* The top byte of each is the one beyond 24 bits. */
		for (v = 1; v <= 0xff; v++) {
			wire[off] = (uint8_t)v;
			assert_int_equal(decode_exact(wire, n, &out), -EPROTO);
		}
		wire[off] = 0;
		memset(wire + off + 1, 0xff, 3);
		assert_int_equal(decode_exact(wire, n, &out), 0);
	}
	assert_int_equal(out.qpn, 0xffffff);
	assert_int_equal(out.psn, 0xffffff);
}

static void test_cm_wire_decode_rejects_retry_over_7(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int off, v;
	size_t n;

	n = valid_wire(wire, SRDMA_CM_REP, 0);
	for (off = 30; off <= 31; off++) {
		for (v = 0; v <= 0xff; v++) {
			wire[off] = (uint8_t)v;
			assert_int_equal(decode_exact(wire, n, &out),
					 v <= 7 ? 0 : -EPROTO);
		}
		wire[off] = 0;
	}
}

static void test_cm_wire_decode_rejects_unknown_flags(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int v;
	size_t n;

	n = valid_wire(wire, SRDMA_CM_REQ, 0);
	for (v = 0; v <= 0xff; v++) {
		wire[11] = (uint8_t)v;
		assert_int_equal(decode_exact(wire, n, &out),
				 v & ~SRDMA_CM_F_ALL ? -EPROTO : 0);
	}
}

static void test_cm_wire_decode_rejects_mtu_over_5(void **state)
{
	uint8_t wire[SRDMA_CM_MSG_MAX];
	struct srdma_cm_msg out;
	unsigned int v;
	size_t n;

	n = valid_wire(wire, SRDMA_CM_REP, 0);
	for (v = 0; v <= 0xff; v++) {
		wire[32] = (uint8_t)v;
		assert_int_equal(decode_exact(wire, n, &out),
				 v <= 5 ? 0 : -EPROTO);
	}
}

/*
 * The reference: the rules of cma_wire.h, spelled out independently of
 * cma_wire.c. Returns 0 or the errno the decoder must report; where a
 * message breaks several rules only "some protocol error" is required.
 */
static int ref_decode(const uint8_t *b, size_t len)
{
	unsigned int l, max;

	if (len < SRDMA_CM_HDR_LEN || memcmp(b, "SRCM", 4))
		return EPROTO;
	if (b[4] != 1)
		return EPROTONOSUPPORT;
	max = b[5] >= 1 && b[5] <= NTYPES ? types[b[5] - 1].pdata_max : 0;
	l = (unsigned int)b[6] << 8 | b[7];
	if (!max || len != l || l < 56 || l - 56 > max || b[33] != l - 56)
		return EPROTO;
	if (b[34] | b[35] | b[52] | b[53] | b[54] | b[55])
		return EPROTO;
	if (b[11] & ~3u || b[12] || b[16] || b[30] > 7 || b[31] > 7 ||
	    b[32] > 5)
		return EPROTO;
	return 0;
}

/* xorshift64*: fixed seed, same sequence on every host. */
static uint64_t rng_state = 0x5352434d00000001ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static size_t fuzz_valid(uint8_t *wire)
{
	struct srdma_cm_msg m;
	unsigned int i = rnd() % NTYPES;
	unsigned int p;
	int n;

	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)types[i].type;
	m.pdata_len = (uint8_t)(rnd() % (types[i].pdata_max + 1));
	for (p = 0; p < m.pdata_len; p++)
		m.pdata[p] = (uint8_t)rnd();
	m.port_space = (uint16_t)rnd();
	m.qp_type = (uint8_t)rnd();
	m.flags = (uint8_t)(rnd() & SRDMA_CM_F_ALL);
	m.qpn = rnd() & 0xffffff;
	m.psn = rnd() & 0xffffff;
	m.qkey = rnd();
	m.reason = (uint16_t)rnd();
	m.lid = (uint16_t)rnd();
	m.resp_res = (uint8_t)rnd();
	m.init_depth = (uint8_t)rnd();
	m.retry_count = (uint8_t)(rnd() % 8);
	m.rnr_retry_count = (uint8_t)(rnd() % 8);
	m.mtu = (uint8_t)(rnd() % 6);
	for (p = 0; p < sizeof(m.gid); p++)
		m.gid[p] = (uint8_t)rnd();
	n = srdma_cm_encode(&m, wire);
	assert_true(n >= SRDMA_CM_FIXED_LEN);
	return (size_t)n;
}

static void fuzz_mutate(uint8_t *wire, size_t *len)
{
	unsigned int pos, p, i;

	switch (rnd() % 4) {
	case 0: /* corrupt a byte, half the time in the fixed part */
		if (!*len)
			break;
		pos = rnd() % 2 ? rnd() % SRDMA_CM_FIXED_LEN : rnd();
		pos %= (unsigned int)*len;
		wire[pos] ^= (uint8_t)(1 + rnd() % 255);
		break;
	case 1: /* truncate */
		*len = rnd() % (*len + 1);
		break;
	case 2: /* append garbage */
		p = 1 + rnd() % 32;
		for (i = 0; i < p && *len < WIRE_CAP; i++)
			wire[(*len)++] = (uint8_t)rnd();
		break;
	default: /* reframe: length, pdata_len and @len agree */
		if (*len < SRDMA_CM_FIXED_LEN)
			break;
		p = rnd() % (WIRE_CAP - SRDMA_CM_FIXED_LEN + 1);
		for (i = (unsigned int)*len; i < SRDMA_CM_FIXED_LEN + p; i++)
			wire[i] = (uint8_t)rnd();
		*len = SRDMA_CM_FIXED_LEN + p;
		wire[6] = (uint8_t)(*len >> 8);
		wire[7] = (uint8_t)*len;
		wire[33] = (uint8_t)p;
		break;
	}
}

static void test_cm_wire_fuzz_mutations(void **state)
{
	enum { ITERATIONS = 100000 };
	uint8_t wire[WIRE_CAP], again[SRDMA_CM_MSG_MAX];
	unsigned int it, k, accepted = 0, rejected = 0;
	struct srdma_cm_msg out;
	size_t len;
	int ret, want;

	for (it = 0; it < ITERATIONS; it++) {
		memset(wire, 0, sizeof(wire));
		len = fuzz_valid(wire);
		for (k = 1 + rnd() % 3; k; k--)
			fuzz_mutate(wire, &len);

		want = ref_decode(wire, len);
		ret = decode_exact(wire, len, &out);
		if (ret) {
			rejected++;
			assert_true(want != 0);
			if (want == EPROTONOSUPPORT)
				assert_int_equal(ret, -EPROTONOSUPPORT);
			else
				assert_true(ret == -EPROTO ||
					    ret == -EPROTONOSUPPORT);
			continue;
		}
		accepted++;
		assert_int_equal(want, 0);
		assert_true(out.pdata_len <= srdma_cm_pdata_max(out.type));
		assert_int_equal(len, SRDMA_CM_FIXED_LEN + out.pdata_len);
		/* Only canonical encodings decode: re-encoding gives @wire. */
		assert_int_equal(srdma_cm_encode(&out, again), len);
		assert_memory_equal(again, wire, len);
	}
	/* Both outcomes must be well exercised, or the fuzz proves little. */
	assert_true(accepted > ITERATIONS / 20);
	assert_true(rejected > ITERATIONS / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_wire_pdata_max_per_type),
		cmocka_unit_test(test_cm_wire_roundtrip_max_pdata),
		cmocka_unit_test(test_cm_wire_roundtrip_no_pdata),
		cmocka_unit_test(test_cm_wire_layout_pinned),
		cmocka_unit_test(test_cm_wire_encode_rejects_unknown_type),
		cmocka_unit_test(test_cm_wire_encode_rejects_pdata_over_limit),
		cmocka_unit_test(test_cm_wire_hdr_check_bad_magic),
		cmocka_unit_test(test_cm_wire_hdr_check_other_version),
		cmocka_unit_test(test_cm_wire_hdr_check_unknown_type),
		cmocka_unit_test(test_cm_wire_hdr_check_length_bounds),
		cmocka_unit_test(
			test_cm_wire_decode_rejects_pdata_over_type_limit),
		cmocka_unit_test(test_cm_wire_decode_rejects_every_truncation),
		cmocka_unit_test(test_cm_wire_decode_rejects_overlong_buffer),
		cmocka_unit_test(
			test_cm_wire_decode_rejects_pdata_len_mismatch),
		cmocka_unit_test(test_cm_wire_decode_rejects_reserved_nonzero),
		cmocka_unit_test(
			test_cm_wire_decode_rejects_qpn_psn_over_24_bits),
		cmocka_unit_test(test_cm_wire_decode_rejects_retry_over_7),
		cmocka_unit_test(test_cm_wire_decode_rejects_unknown_flags),
		cmocka_unit_test(test_cm_wire_decode_rejects_mtu_over_5),
		cmocka_unit_test(test_cm_wire_fuzz_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
