/*
 * fuzz-name: a libFuzzer harness for what mq reads from names and
 * receipts: the name, key, bucket and seconds parsers, the receipt
 * validator, and the escaping of listings.  A name that parses must format
 * back to itself (names are canonical), and a receipt that validates must
 * lie inside the spool's cur/.  Run by `make fuzz`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mq.h"
#include "tools.h"

static struct mq_spool sp;
static char dir[] = "/tmp/mq-fuzz.XXXXXX";
static int ready;

static void
cleanup(void)
{
	static const char *const sub[] = { MQ_DIR_TMP, MQ_DIR_NEW, MQ_DIR_CUR,
	    MQ_DIR_DEAD, MQ_DIR_REASON, "" };
	char path[96];
	size_t i;

	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(path, sizeof(path), "%s/spool/%s", dir, sub[i]);
		rmdir(path);
	}
	rmdir(dir);
}

static void
setup(void)
{
	char path[64];

	if (mkdtemp(dir) == NULL)
		abort();
	atexit(cleanup);
	snprintf(path, sizeof(path), "%s/spool", dir);
	if (mq_spool_open(&sp, path, 1) == -1 || mq_spool_real(&sp) == -1)
		abort();
	ready = 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum mq_state states[] = { MQ_NEW, MQ_CUR, MQ_DEAD };
	char s[512], back[MQ_NAME_MAX], receipt[1024];
	struct mq_receipt rc;
	struct mq_name nm;
	const char *errstr, *why;
	uint64_t v;
	size_t i;
	FILE *null;

	if (!ready)
		setup();
	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (mq_name_parse(s, states[i], &nm) == -1)
			continue;
		if (mq_name_format(back, sizeof(back), states[i], &nm) == -1 ||
		    strcmp(back, s) != 0 || !mq_id_valid(nm.id))
			abort();
	}
	mq_id_valid(s);
	mq_leaf_key_parse(s, MQ_TOP_DIGITS, &v);
	mq_leaf_key_parse(s, MQ_MID_DIGITS, &v);
	mq_leaf_key_parse(s, MQ_KEY_DIGITS, &v);
	mq_cur_bucket_parse(s, &v);
	if (mq_secs_parse(s, &v, &errstr) == 0 && v > MQ_SECS_MAX * 1000 + 999)
		abort();

	/* As a receipt inside this spool, and as any path. */
	mq_receipt_init(&rc);
	snprintf(receipt, sizeof(receipt), "%s/%s", sp.real, s);
	if (mq_receipt_open(&sp, receipt, &rc, &why) == MQ_EX_OK &&
	    strncmp(receipt, sp.real, strlen(sp.real)) != 0)
		abort();
	mq_receipt_open(&sp, s, &rc, &why);
	mq_receipt_close(&rc);

	if ((null = fopen("/dev/null", "w")) != NULL) {
		mq_escape(null, s, size);
		mq_json_string(null, (const char *)data, size);
		fclose(null);
	}
	return 0;
}
