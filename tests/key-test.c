/*
 * key-test: unit tests of the SHA-256 in src/core/key.c against the FIPS 180-2
 * and NIST CAVP vectors, and of the key hash names carry, printing TAP.
 * Run by tests/key.bats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mq.h"

static int n, failed;

static void
ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
	if (!cond)
		failed++;
}

static int
sha256_is(const void *msg, size_t len, const char *want)
{
	unsigned char md[32];
	char hex[65];
	int i;

	mq_sha256(msg, len, md);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return strcmp(hex, want) == 0;
}

int
main(void)
{
	char hash[MQ_KEYHASH_LEN + 1], *a;
	int lens = 1;

	ok(sha256_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad"), "SHA-256 of \"abc\"");
	ok(sha256_is("", 0, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855"), "SHA-256 of \"\"");
	ok(sha256_is("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1"),
	    "SHA-256 of the 448-bit message (padding in a second block)");
	ok(sha256_is("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	    "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu", 112,
	    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
	    "SHA-256 of the 896-bit message");
	a = malloc(1000000);
	if (a == NULL)
		return 2;
	memset(a, 'a', 1000000);
	ok(sha256_is(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0"), "SHA-256 of a million 'a'");
	/* Lengths about a block's end: 55, 56 and 64 bytes of 'a'. */
	lens &= sha256_is(a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9a"
	    "e9b0a925a5258e241c9f1e910f734318");
	lens &= sha256_is(a, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f"
	    "590ce20f1bde7090ef7970686ec6738a");
	lens &= sha256_is(a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209"
	    "f439851db43d0ba5997337df154668eb");
	ok(lens, "SHA-256 of 55, 56 and 64 'a' (the padding's edges)");
	free(a);

	mq_key_hash("abc", 3, hash);
	ok(strcmp(hash, "ba7816bf8f01cfea414140de5dae2223") == 0,
	    "a key's hash is the first 16 bytes of its SHA-256, lowercase hex");
	ok(mq_key_is_hash(hash) &&
	    !mq_key_is_hash("BA7816BF8F01CFEA414140DE5DAE2223") &&
	    !mq_key_is_hash("ba7816bf8f01cfea414140de5dae222") &&
	    !mq_key_is_hash("ba7816bf8f01cfea414140de5dae22230"),
	    "hash names: 32 lowercase hex, no more, no less");
	a = malloc(MQ_KEY_MAX + 1);
	if (a == NULL)
		return 2;
	memset(a, 'k', MQ_KEY_MAX + 1);
	ok(mq_key_valid(a, 1) && mq_key_valid(a, MQ_KEY_MAX) &&
	    !mq_key_valid(a, MQ_KEY_MAX + 1) && !mq_key_valid(a, 0),
	    "keys are 1 to 200 bytes");
	ok(!mq_key_valid("a\nb", 3) && !mq_key_valid("a\0b", 3) &&
	    mq_key_valid("a b/\"c\xc3\xa9", 8), "no newline nor NUL in a key; "
	    "blanks, slashes, quotes, UTF-8 are fine");
	free(a);
	printf("1..%d\n", n);
	return failed != 0;
}
