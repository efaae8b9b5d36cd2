/* Thread names folded one way for every collector that shows them: each run of digits becomes
 * one 'N' (pool-12-thread-3 -> pool-N-thread-N, HandshakeCompletedNotify-Thread stays), so a
 * pool's threads count under one name. A name ends at its length, at its first NUL byte (Java
 * names, modified UTF-8, have none) and at the destination's size - 1. Included after
 * common.bpf.h. */
#ifndef JVMDIAG_FOLD_BPF_H
#define JVMDIAG_FOLD_BPF_H

#include "jvm.h"

/* Folds one byte of a name (not NUL): the byte to keep, or 0 when it is dropped (a digit
 * right after a digit). *prev_digit carries the state from byte to byte, starting at 0. */
static __always_inline char fold_char(char c, __u32 *prev_digit)
{
	__u32 digit = c >= '0' && c <= '9';
	if (digit && *prev_digit)
		return 0;
	*prev_digit = digit;
	return digit ? 'N' : c;
}

/* Folds src (at most len bytes): writes the folded text into dst when dst is not NULL (its n
 * bytes, a power of two, zeroed by the caller) and returns the 64-bit FNV-1a hash of that text,
 * what names are keyed by in the tables that store each text once (OTHER_HASH is kept for
 * "other": a name hashing to it counts under 1). Unrolled: for short names (a thread's comm,
 * COMM_LEN) and the hash of NAME_LEN ones; the compiler drops the part a caller does not use. */
static __always_inline __u64 fold(char *dst, const char *src, __u32 n, __u32 len)
{
	__u64 h = FNV_OFFSET;
	__u32 j = 0, prev = 0;
	for (__u32 i = 0; i < n - 1; i++) {
		if (i >= len || !src[i])
			break;
		char c = fold_char(src[i], &prev);
		if (!c)
			continue;
		if (dst)
			dst[j++ & (n - 1)] = c;
		h = (h ^ (__u8)c) * FNV_PRIME;
	}
	return h == OTHER_HASH ? 1 : h;
}

/* fold's text for NAME_LEN names, one byte per bpf_loop step (5.17+): the verifier checks one
 * step, not 63 unrolled ones. Slow paths only (a name not seen before). */
struct fold_loop_ctx {
	const char *src;
	char *dst;
	__u32 len;
	__u32 j;
	__u32 prev_digit;
};

static long fold_loop_step(__u64 i, struct fold_loop_ctx *c)
{
	if (i >= c->len || i >= NAME_LEN - 1)
		return 1;
	char ch = c->src[i & (NAME_LEN - 1)];
	if (!ch)
		return 1;
	ch = fold_char(ch, &c->prev_digit);
	if (ch) {
		c->dst[c->j & (NAME_LEN - 1)] = ch;
		c->j++;
	}
	return 0;
}

static __always_inline void fold_loop(char *dst, const char *src, __u32 len)
{
	struct fold_loop_ctx c = { .src = src, .dst = dst, .len = len };
	bpf_loop(NAME_LEN - 1, fold_loop_step, &c, 0);
}

#endif
