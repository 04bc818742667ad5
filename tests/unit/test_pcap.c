// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pcap.c - the SRDMA_PCAP writer (transport/net/pcap.c): several
 * processes opening one new file at the same moment and writing records
 * at full speed leave exactly one global header and whole records, none
 * interleaved, every writer's records in its own order; each record's
 * synthesized headers are valid (Ethernet type by IP version, IPv4
 * header checksum, UDP checksum over IPv4 and IPv6) and carry the
 * datagram's bytes unchanged, however many iovecs it came in; an
 * existing capture is appended to and a file that is not one is refused.
 * Wireshark's view of such a file is checked by tests/net/check_pcap.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "transport/net/pcap.h"

#define WRITERS 4
#define RECORDS 400

static char path[4096];

static int setup(void **state)
{
	const char *dir = getenv("SRDMA_DIR");

	(void)state;
	if (!dir)
		dir = "/tmp";
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/test_pcap.%d.pcap", dir, getpid());
	unlink(path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void mkpath(struct srdma_wire_path *p, bool v6, int who)
{
	memset(p, 0, sizeof(*p));
	if (v6) {
		p->sip[0] = p->dip[0] = 0xfd;
		p->sip[1] = p->dip[1] = 0x53;
		p->sip[15] = (uint8_t)(who + 1);
		p->dip[15] = 0x99;
	} else {
		p->sip[10] = p->sip[11] = p->dip[10] = p->dip[11] = 0xff;
		p->sip[12] = p->dip[12] = 198;
		p->sip[13] = p->dip[13] = 18;
		p->sip[15] = (uint8_t)(who + 1);
		p->dip[15] = 0x99;
	}
	p->sport = (uint16_t)(0xc000 + who);
	p->dport = 4791;
}

/* Datagram @seq of writer @who: a BTH-like start naming both, then a
 * pattern; length varies with @seq. */
static size_t datagram(uint8_t *buf, int who, int seq)
{
	size_t len = 16 + (size_t)(seq * 37 % 1500) / 4 * 4, i;

	buf[0] = 0x04;
	buf[1] = (uint8_t)who;
	buf[2] = (uint8_t)(seq >> 8);
	buf[3] = (uint8_t)seq;
	for (i = 4; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + (size_t)who + (size_t)seq);
	return len;
}

/* Write @seq's datagram in 1, 3 or 20 pieces (the last beyond MAX_IOV). */
static void put(struct srdma_pcap *pc, int who, int seq)
{
	uint8_t buf[2048];
	struct iovec iov[20];
	struct srdma_wire_path p;
	size_t len = datagram(buf, who, seq), off = 0;
	int n = seq % 3 == 0 ? 1 : seq % 3 == 1 ? 3 : 20, i;

	mkpath(&p, seq & 4, who);
	for (i = 0; i < n; i++) {
		size_t take = i == n - 1 ? len - off : len / (size_t)n;

		iov[i].iov_base = buf + off;
		iov[i].iov_len = take;
		off += take;
	}
	srdma_pcap_write(pc, &p, iov, n);
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += rd16(p + i);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* Check one record's frame; return its writer and sequence number. */
static void check_frame(const uint8_t *f, size_t len, int *who, int *seq)
{
	const uint8_t *ip = f + 14, *udp, *dg;
	uint8_t want[2048], pseudo[40] = {0};
	size_t iplen, dglen;
	uint32_t s;

	assert_true(len > 14 + 20 + 8);
	if (rd16(f + 12) == 0x0800) {
		assert_int_equal(ip[0], 0x45);
		iplen = 20;
		assert_int_equal(fold(sum16(0, ip, 20)), 0xffff);
		assert_int_equal(rd16(ip + 2), len - 14);
		assert_int_equal(rd16(ip + 4), 0);	/* ID */
		assert_int_equal(rd16(ip + 6), 0x4000); /* DF */
		memcpy(pseudo, ip + 12, 8);
		pseudo[9] = 17;
		memcpy(pseudo + 10, ip + 20 + 4, 2);
		s = sum16(0, pseudo, 12);
	} else {
		assert_int_equal(rd16(f + 12), 0x86dd);
		assert_int_equal(ip[0] >> 4, 6);
		iplen = 40;
		assert_int_equal(rd16(ip + 4), len - 14 - 40);
		memcpy(pseudo, ip + 8, 32);
		memcpy(pseudo + 34, ip + 40 + 4, 2);
		pseudo[39] = 17;
		s = sum16(0, pseudo, 40);
	}
	assert_int_equal(ip[iplen - (iplen == 20 ? 11 : 34)], 17);
	udp = ip + iplen;
	assert_int_equal(rd16(udp + 2), 4791);
	assert_int_equal(rd16(udp + 4), len - 14 - iplen);
	assert_int_not_equal(rd16(udp + 6), 0);
	assert_int_equal(fold(sum16(s, udp, len - 14 - iplen)), 0xffff);
	dg = udp + 8;
	dglen = len - 14 - iplen - 8;
	*who = dg[1];
	*seq = dg[2] << 8 | dg[3];
	assert_int_equal(datagram(want, *who, *seq), dglen);
	assert_memory_equal(dg, want, dglen);
	assert_int_equal(rd16(udp), 0xc000 + *who);
	/* Made-up MACs name the addresses' last bytes. */
	assert_int_equal(f[6], 0x02);
	assert_int_equal(f[11], *who + 1);
}

/* Read the whole file; check it; return the number of records. */
static int check_file(int per_writer_expected)
{
	int next[WRITERS] = {0}, count = 0, who, seq;
	uint32_t g[6];
	uint8_t *buf;
	struct stat st;
	size_t off;
	FILE *f;

	assert_int_equal(stat(path, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), st.st_size);
	fclose(f);
	memcpy(g, buf, sizeof(g));
	assert_int_equal(g[0], 0xa1b2c3d4u);
	assert_int_equal(g[5], 1); /* LINKTYPE_ETHERNET */
	for (off = 24; off < (size_t)st.st_size;) {
		uint32_t rec[4];

		assert_true(off + 16 <= (size_t)st.st_size);
		memcpy(rec, buf + off, sizeof(rec));
		assert_int_equal(rec[2], rec[3]);
		assert_true(rec[1] < 1000000);
		assert_true(off + 16 + rec[2] <= (size_t)st.st_size);
		check_frame(buf + off + 16, rec[2], &who, &seq);
		assert_true(who < WRITERS);
		assert_int_equal(seq, next[who]);
		next[who]++;
		count++;
		off += 16 + rec[2];
	}
	for (who = 0; who < WRITERS && per_writer_expected; who++)
		assert_int_equal(next[who], per_writer_expected);
	free(buf);
	return count;
}

static void test_writers_share_one_file(void **state)
{
	int go[2], who, status;
	pid_t pids[WRITERS];

	(void)state;
	assert_int_equal(pipe(go), 0);
	for (who = 0; who < WRITERS; who++) {
		pids[who] = fork();
		assert_true(pids[who] >= 0);
		if (pids[who] == 0) {
			struct srdma_pcap *pc;
			char c;
			int seq;

			close(go[1]);
			/* All open at once, when the pipe closes. */
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			pc = srdma_pcap_open(path);
			if (!pc)
				_exit(2);
			for (seq = 0; seq < RECORDS; seq++)
				put(pc, who, seq);
			_exit(atomic_load(&pc->records) == RECORDS &&
					      !atomic_load(&pc->errors)
				      ? 0
				      : 1);
		}
	}
	close(go[0]);
	close(go[1]);
	for (who = 0; who < WRITERS; who++) {
		assert_int_equal(waitpid(pids[who], &status, 0), pids[who]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(check_file(RECORDS), WRITERS * RECORDS);
}

static void test_append_and_refuse(void **state)
{
	struct srdma_pcap *pc;
	int fd;

	(void)state;
	unlink(path);
	pc = srdma_pcap_open(path);
	assert_non_null(pc);
	put(pc, 0, 0);
	put(pc, 0, 1);
	srdma_pcap_close(pc);
	pc = srdma_pcap_open(path);
	assert_non_null(pc);
	put(pc, 0, 2);
	srdma_pcap_close(pc);
	assert_int_equal(check_file(0), 3);

	/* Not a pcap file: refused, left alone. */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a capture, just text\n", 25), 25);
	close(fd);
	errno = 0;
	assert_null(srdma_pcap_open(path));
	assert_int_equal(errno, EINVAL);
	/* Nowhere to write. */
	errno = 0;
	assert_null(srdma_pcap_open("/nonexistent-dir/x.pcap"));
	assert_int_equal(errno, ENOENT);
	/* NULL handle: writes and close are no-ops. */
	put(NULL, 0, 0);
	srdma_pcap_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writers_share_one_file),
		cmocka_unit_test(test_append_and_refuse),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
